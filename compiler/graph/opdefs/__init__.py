"""The op families: each module registers its operators (OpDef) and their ONNX converters
(onnx_op) in the one registry of opdef.py when imported. A new family is one more module
here."""
from . import (activations, data, elementwise, internal, layout, nn, norm, pool,  # noqa: F401
               quant, reduce)
