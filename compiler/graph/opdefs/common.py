"""Helpers of the ONNX converters shared by several op families."""
from __future__ import annotations

import numpy as np

from ..errors import UnsupportedOpError
from ..onnx_import import onnx_dtype


def dtype_of(c, elem_type: int, what: str) -> str:
    """An ONNX data type number as a graph-IR dtype (UnsupportedOpError naming the node)."""
    return onnx_dtype(elem_type, f"{what} of {c.op_type} node {c.label!r}", UnsupportedOpError)


def spatial(c, x_shape, kernel, with_dilations: bool = True):
    """(strides, pads (begins + ends), dilations) of an N-D conv/pool, resolving auto_pad."""
    rank = len(kernel)
    strides = tuple(c.attr("strides", (1,) * rank))
    dilations = tuple(c.attr("dilations", (1,) * rank)) if with_dilations else (1,) * rank
    pads = list(c.attr("pads", (0,) * (2 * rank)))
    auto = c.attr("auto_pad", "NOTSET")
    if auto in ("SAME_UPPER", "SAME_LOWER"):
        pads = [0] * (2 * rank)
        for i in range(rank):
            out = -(-x_shape[2 + i] // strides[i])
            total = max(0, (out - 1) * strides[i] + dilations[i] * (kernel[i] - 1) + 1
                        - x_shape[2 + i])
            small, big = total // 2, total - total // 2
            pads[i], pads[i + rank] = (small, big) if auto == "SAME_UPPER" else (big, small)
    elif auto == "VALID":
        pads = [0] * (2 * rank)
    elif auto != "NOTSET":
        raise c.fail("auto_pad", "NOTSET, VALID, SAME_UPPER or SAME_LOWER", repr(auto))
    if len(strides) != rank or len(pads) != 2 * rank or len(dilations) != rank:
        raise c.fail("strides/pads/dilations", f"given for {rank} spatial axes",
                     (strides, tuple(pads), dilations))
    return strides, tuple(int(p) for p in pads), dilations


def pads_2d(pads) -> tuple[int, int, int, int]:
    """ONNX 2-D pads (h_begin, w_begin, h_end, w_end) as the IR's (top, left, bottom, right)."""
    return (pads[0], pads[1], pads[2], pads[3])


def as_2d(c, value: str, rank: int) -> str:
    """A rank-3 NCW value as NC1W (1-D convs and pools run as 2-D ones)."""
    shape = c.b.types[value].shape
    return c.op("reshape", [value], shape=shape[:2] + (1,) + shape[2:])


def one_d_attrs(strides, pads, dilations, kernel):
    """1-D conv/pool attributes as the equivalent 2-D ones over an NC1W tensor."""
    return ((1,) + tuple(strides), (0, pads[0], 0, pads[1]), (1,) + tuple(dilations),
            (1,) + tuple(kernel))


def static_axes(c, index: int, attr: str, rank: int, what: str = "axes"):
    """Axes given as an input (newer opsets) or an attribute (older), normalised; None if
    neither is given."""
    values = c.ints(index, what) if c.has(index) else c.attr(attr)
    if values is None:
        return None
    return tuple(c.axis(int(a), rank, what) for a in values)


def scalar(c, index: int, what: str, default=None):
    value = c.static(index, what)
    if value is None:
        return default
    array = np.asarray(value)
    if array.size != 1:
        raise c.fail(what, "a scalar", f"shape {array.shape}")
    return array.reshape(()).item()
