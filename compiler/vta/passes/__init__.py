"""One module per lowering pass; the ordered list lives in ``vta/pipeline.py``."""
