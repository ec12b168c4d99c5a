"""The op families: each module registers its operators (OpDef) and their ONNX converters
(onnx_op) in the one registry of opdef.py when imported. A new family is one more module
here."""
from . import (activations, cast, data, einsum, elementwise, internal, layout,  # noqa: F401
               nn, norm, pool, quant, reduce, resize)
