"""Exact integer kernels of the int8 reference interpreter (int8_ref.py).

Integer ops are evaluated exactly as the accelerator computes them: int8 x int8 products
accumulated exactly (int64, or float64 BLAS where every partial sum is an integer below
2**53) and wrapped to int32 (two's complement), wrapping int32 adds, arithmetic shifts (a
negative amount shifts left), clips, and narrowing casts that keep the low bits. These
kernels share no code with the float reference (kernels.py) or the CPU fallback
(kernels_cpu.py), so the accelerator's results and the compiler's rewrites can be checked
against them bit for bit. The op table (opdefs/) names them as each operator's `int8`.
"""
from __future__ import annotations

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from .errors import GraphError
from .ir import Node
from vtalab.runtime.layout import on_plain_operands


def wrap32(values: np.ndarray) -> np.ndarray:
    """Two's-complement wrap of integer values (int64, or exact integers in float64) to
    int32."""
    return np.asarray(values).astype(np.int64).astype(np.int32)


def _int_windows(x, kernel, strides, dilations, pads, fill):
    top, left, bottom, right = pads
    xp = np.pad(x, ((0, 0), (0, 0), (top, bottom), (left, right)), constant_values=fill)
    (kh, kw), (sh, sw), (dh, dw) = kernel, strides, dilations
    ho = (xp.shape[2] - dh * (kh - 1) - 1) // sh + 1
    wo = (xp.shape[3] - dw * (kw - 1) - 1) // sw + 1
    view = sliding_window_view(xp, (dh * (kh - 1) + 1, dw * (kw - 1) + 1), axis=(2, 3))
    return view[:, :, :ho * sh:sh, :wo * sw:sw, ::dh, ::dw]


def _exact_dtype(x: np.ndarray, w: np.ndarray, terms: int):
    """float64 when every partial sum is an integer below 2**53 (so BLAS is exact), else
    int64. int8 x int8 products are at most 2**14: float64 is exact up to 2**39 terms."""
    bound = float(np.abs(x).max(initial=0)) * float(np.abs(w).max(initial=0)) * terms
    return np.float64 if bound < 2.0 ** 53 else np.int64


def int_conv2d(x: np.ndarray, w: np.ndarray, strides, pads, dilations, groups) -> np.ndarray:
    """NCHW int8 convolution with OIHW int8 weights -> int32 (wrapping)."""
    dtype = _exact_dtype(x, w, int(np.prod(w.shape[1:])))
    cols = _int_windows(x.astype(dtype), w.shape[2:], strides, dilations, pads, 0)
    n, c, ho, wo, kh, kw = cols.shape
    o, cg = w.shape[:2]
    w64 = w.astype(dtype)
    if groups == 1:
        acc = np.tensordot(cols, w64, axes=([1, 4, 5], [1, 2, 3])).transpose(0, 3, 1, 2)
    else:
        cols = cols.reshape(n, groups, cg, ho, wo, kh, kw)
        acc = np.einsum("ngchwij,gocij->ngohw", cols,
                        w64.reshape(groups, o // groups, cg, kh, kw)).reshape(n, o, ho, wo)
    return wrap32(acc)


def int_dense(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    dtype = _exact_dtype(x, w, x.shape[-1])
    return wrap32(x.astype(dtype) @ w.astype(dtype).T)


def shift_right(x: np.ndarray, amount) -> np.ndarray:
    """Arithmetic shift right of int32 values; a negative amount shifts left (wrapping)."""
    x64 = x.astype(np.int64)
    a = np.clip(np.asarray(amount, np.int64), -32, 63)
    return wrap32(np.where(a >= 0, x64 >> np.maximum(a, 0), x64 << np.maximum(-a, 0)))


def _packed_call(node: Node, x: np.ndarray, w: np.ndarray, compute) -> np.ndarray:
    """Run a plain-layout kernel on the node's operands, packed or plain."""
    if node.attr("layout", "plain") != "packed":
        return compute(x, w)
    return on_plain_operands(x, w, compute)


def conv2d(node, x, w, b=None):
    conv = lambda xa, wa: int_conv2d(xa, wa, node.attr("strides", (1, 1)),
                                     node.attr("pads", (0, 0, 0, 0)),
                                     node.attr("dilations", (1, 1)), node.attr("groups", 1))
    acc = _packed_call(node, x, w, conv)
    return acc if b is None else wrap32(acc.astype(np.int64) + b)


def dense(node, x, w, b=None):
    acc = _packed_call(node, x, w, int_dense)
    return acc if b is None else wrap32(acc.astype(np.int64) + b)


def requant(node, acc, bias=None, residual=None):
    """A fused op's epilogue on its int32 GEMM result: + bias, + aligned residual,
    >> shift, clip, narrow."""
    acc = acc.astype(np.int64)
    if bias is not None:
        acc = wrap32(acc + bias).astype(np.int64)
    if residual is not None:
        aligned = shift_right(residual.astype(np.int32), node.attr("residual_shr", 0))
        acc = wrap32(acc + aligned).astype(np.int64)
    acc = shift_right(wrap32(acc), node.attr("shift", 0))
    acc = np.clip(acc, node.attr("lo", -2 ** 31), node.attr("hi", 2 ** 31 - 1))
    return acc.astype(node.attr("out_dtype", "int8"))


def max_pool(node, x):
    """Max pooling over int8 (padding never wins: it is the dtype's minimum)."""
    kernel, strides = node.attr("kernel"), node.attr("strides", (1, 1))
    dilations = node.attr("dilations", (1, 1))
    top, left, bottom, right = node.attr("pads", (0, 0, 0, 0))
    if node.attr("ceil_mode", 0):  # extra rows/columns so the last partial window exists
        for axis, (k, st, d) in enumerate(zip(kernel, strides, dilations)):
            size = x.shape[2 + axis] + (top, left)[axis] + (bottom, right)[axis]
            span = d * (k - 1) + 1
            out = -(-(size - span) // st) + 1
            if (out - 1) * st >= x.shape[2 + axis] + (top, left)[axis]:
                out -= 1
            extra = max(0, (out - 1) * st + span - size)
            bottom, right = (bottom + extra, right) if axis == 0 else (bottom, right + extra)
    cols = _int_windows(x, kernel, strides, dilations, (top, left, bottom, right),
                        np.iinfo(x.dtype).min)
    return cols.max(axis=(4, 5))


def _exponent(node: Node) -> int:
    scale = float(np.asarray(node.attr("scale")))
    e = -np.log2(scale)
    if np.asarray(node.attr("scale")).size != 1 or e != np.round(e) or \
            np.any(np.asarray(node.attr("zero_point")) != 0):
        raise GraphError(f"scale of {node.op} node {node.name!r} must be a power of two with "
                         f"zero point 0, not {scale} (not a power-of-two quantised graph)")
    return int(np.round(e))


def quantize(node, x):
    q = np.rint(x.astype(np.float64) * 2.0 ** _exponent(node))
    return np.clip(q, -128, 127).astype(np.int8)


def dequantize(node, x):
    return (x.astype(np.float64) * 2.0 ** -_exponent(node)).astype(np.float32)


def pad(node, x):
    pads = node.attr("pads")
    rank = x.ndim
    widths = [(pads[i], pads[i + rank]) for i in range(rank)]
    mode = node.attr("mode", "constant")
    return np.pad(x, widths) if mode == "constant" else np.pad(x, widths, mode=mode)


def add(node, a, b):
    return wrap32(a.astype(np.int64) + b)


def sub(node, a, b):
    return wrap32(a.astype(np.int64) - b)


def mul(node, a, b):
    return wrap32(a.astype(np.int64) * b)


def shr(node, x):
    return shift_right(x, node.attr("amount", 0))


def clip(node, x):
    return np.clip(x, node.attr("lo"), node.attr("hi")).astype(x.dtype)


def cast(node, x):
    return x.astype(node.attr("dtype"))
