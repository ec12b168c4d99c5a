"""Graph passes. The ordered pipeline is in `pipeline.py`; each pass is its own module."""
from .pipeline import PIPELINE, PassContext, canonicalize, compile_graph

__all__ = ["PIPELINE", "PassContext", "canonicalize", "compile_graph"]
