"""The op families: each module registers its operators (OpDef) and their ONNX converters
(onnx_op) in the one registry of opdef.py when imported. A new family is one more module
here."""
from . import (activations, alu, batch_dense, cast, data, einsum,  # noqa: F401
               elementwise, internal, layout, nn, norm, pool, quant, reduce, resize)
