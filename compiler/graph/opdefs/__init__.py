"""The op families: each module registers its operators (OpDef) and their ONNX converters
(onnx_op) in the one registry of opdef.py when imported. A new family is one more module
here."""
from . import (activations, alu, cast, data, einsum, elementwise, internal,  # noqa: F401
               layout, nn, norm, pool, quant, reduce, resize)
