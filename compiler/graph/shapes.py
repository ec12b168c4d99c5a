"""Helpers of type inference shared by the op definitions (opdefs/)."""
from __future__ import annotations

import numpy as np

from .errors import GraphError
from .ir import Node, TensorType

FLOATS = ("float32", "float16", "float64")
INTEGERS = ("int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64")


def fail(node: Node, what: str, expected: str, actual) -> GraphError:
    return GraphError(f"{what} of {node.op} node {node.name!r} must be {expected}, not {actual}")


def need(node: Node, types, count: int | tuple[int, int]) -> None:
    low, high = (count, count) if isinstance(count, int) else count
    if not low <= len(types) <= high:
        raise fail(node, "input count", f"{low}..{high}", len(types))


def need_dtype(node: Node, t: TensorType, allowed, what: str = "input dtype") -> None:
    if t.dtype not in allowed:
        raise fail(node, what, f"one of {list(allowed)}", t.dtype)


def same_dtypes(node: Node, types) -> str:
    dtypes = [t.dtype for t in types if t is not None]
    if len(set(dtypes)) > 1:
        raise fail(node, "operand dtypes", "equal", dtypes)
    return dtypes[0]


def broadcast_shape(node: Node, *shapes) -> tuple[int, ...]:
    try:
        return tuple(np.broadcast_shapes(*shapes))
    except ValueError:
        raise fail(node, "input shapes", "broadcast-compatible", list(shapes)) from None


def axis_of(node: Node, axis: int, rank: int, what: str = "axis") -> int:
    if not -rank <= axis < max(rank, 1):
        raise fail(node, what, f"in {-rank}..{rank - 1}", axis)
    return axis % max(rank, 1)


def conv_out_size(size: int, kernel: int, stride: int, pad_lo: int, pad_hi: int,
                  dilation: int = 1, ceil_mode: bool = False) -> int:
    span = dilation * (kernel - 1) + 1
    total = size + pad_lo + pad_hi - span
    out = (-(-total // stride) if ceil_mode else total // stride) + 1
    if ceil_mode and (out - 1) * stride >= size + pad_lo:
        out -= 1
    return out


def acc_dtype(node: Node, dtype: str) -> str:
    if dtype in FLOATS:
        return dtype
    if dtype == "int8":
        return "int32"
    raise fail(node, "input dtype", "a float type or int8", dtype)


def packed(node: Node) -> bool:
    return node.attr("layout", "plain") == "packed"


def same_type(node: Node, types) -> list[TensorType]:
    """One input, the output has its type."""
    need(node, types, 1)
    return [types[0]]


def broadcast_type(node: Node, types) -> list[TensorType]:
    """Two or more inputs of one dtype, broadcast together."""
    need(node, types, (2, 64))
    dtype = same_dtypes(node, types)
    return [TensorType(broadcast_shape(node, *[t.shape for t in types]), dtype)]


def as_bool(node: Node, types) -> list[TensorType]:
    """A comparison: broadcast operands of one dtype, a bool output."""
    return [TensorType(broadcast_type(node, types)[0].shape, "bool")]
