"""Type inference of graph-IR nodes, from the op table (opdef.py, opdefs/).

Layout conventions: activations NCHW (or packed N'C'HW{n}{c}, see runtime/layout.py), conv
weights OIHW, dense weights [out, in]. Integer conv/dense take int8 operands and produce int32.
The inference rules themselves live with each operator's definition in `opdefs/`.
"""
from __future__ import annotations

from .ir import Node, TensorType
from .opdef import known_ops, opdef
from .shapes import acc_dtype, broadcast_shape, conv_out_size, packed

__all__ = ["infer_types", "known_ops", "acc_dtype", "broadcast_shape", "conv_out_size",
           "packed"]


def infer_types(node: Node, in_types: list[TensorType | None]) -> list[TensorType]:
    return opdef(node.op, node.name).infer(node, in_types)
