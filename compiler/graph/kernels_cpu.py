"""Vectorised numpy kernels of the CPU fallback (used where no LLVM kernel applies).

The op table (opdefs/) names them as each operator's `cpu` kernel. Integer semantics are the
graph IR's (opdefs/internal.py `accel_*`): int8 x int8 products summed
exactly and wrapped to int32, wrapping adds, arithmetic shifts where a negative amount
shifts left, clips, and narrowing that keeps the low bits. Float kernels follow ONNX.
"""
from __future__ import annotations

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

__all__ = ["wrap32", "shift_right", "windows", "int_conv", "conv2d", "dense", "matmul",
           "requant_epilogue", "qconv2d", "qdense", "binary", "clip", "max_pool", "avg_pool",
           "global_avg_pool", "batch_norm", "softmax", "pad", "quantize", "dequantize"]


def wrap32(values) -> np.ndarray:
    return np.asarray(values).astype(np.int64).astype(np.int32)


def shift_right(x: np.ndarray, amount) -> np.ndarray:
    x64 = x.astype(np.int64)
    a = np.clip(np.asarray(amount, np.int64), -32, 63)
    return wrap32(np.where(a >= 0, x64 >> np.maximum(a, 0), x64 << np.maximum(-a, 0)))


def _out_size(size, k, stride, lo, hi, dilation=1, ceil=False):
    total = size + lo + hi - dilation * (k - 1) - 1
    out = (-(-total // stride) if ceil else total // stride) + 1
    if ceil and (out - 1) * stride >= size + lo:
        out -= 1
    return out


def windows(x, kernel, strides, pads, dilations=(1, 1), fill=0, ceil=False):
    """[N, C, Ho, Wo, kh, kw] windows of NCHW `x` padded with `fill`."""
    (kh, kw), (sh, sw), (dh, dw) = kernel, strides, dilations
    top, left, bottom, right = pads
    ho = _out_size(x.shape[2], kh, sh, top, bottom, dh, ceil)
    wo = _out_size(x.shape[3], kw, sw, left, right, dw, ceil)
    bottom = max(bottom, (ho - 1) * sh + dh * (kh - 1) + 1 - x.shape[2] - top)
    right = max(right, (wo - 1) * sw + dw * (kw - 1) + 1 - x.shape[3] - left)
    xp = np.pad(x, ((0, 0), (0, 0), (top, bottom), (left, right)), constant_values=fill)
    view = sliding_window_view(xp, (dh * (kh - 1) + 1, dw * (kw - 1) + 1), axis=(2, 3))
    return view[:, :, :(ho - 1) * sh + 1:sh, :(wo - 1) * sw + 1:sw, ::dh, ::dw]


def _conv(x, w, strides, pads, dilations, groups, dtype):
    cols = windows(x.astype(dtype), w.shape[2:], strides, pads, dilations)
    n, c, ho, wo, kh, kw = cols.shape
    o, cg = w.shape[:2]
    wd = w.astype(dtype)
    if groups == 1:
        return np.tensordot(cols, wd, axes=([1, 4, 5], [1, 2, 3])).transpose(0, 3, 1, 2)
    cols = cols.reshape(n, groups, cg, ho, wo, kh, kw)
    out = np.einsum("ngchwij,gocij->ngohw", cols, wd.reshape(groups, o // groups, cg, kh, kw))
    return out.reshape(n, o, ho, wo)


def int_conv(node, x, w) -> np.ndarray:
    """int8 NCHW x OIHW -> int32 (float64 sums are exact below 2**53: int8 products)."""
    return wrap32(_conv(x, w, node.attr("strides", (1, 1)), node.attr("pads", (0,) * 4),
                        node.attr("dilations", (1, 1)), node.attr("groups", 1), np.float64))


def conv2d(node, x, w, b=None):
    if x.dtype.kind in "iu":
        acc = int_conv(node, x, w)
        return acc if b is None else wrap32(acc.astype(np.int64) + b)
    out = _conv(x, w, node.attr("strides", (1, 1)), node.attr("pads", (0,) * 4),
                node.attr("dilations", (1, 1)), node.attr("groups", 1), np.float32)
    return (out if b is None else out + b.reshape(1, -1, 1, 1)).astype(x.dtype)


def dense(node, x, w, b=None):
    if x.dtype.kind in "iu":
        acc = wrap32(x.astype(np.float64) @ w.astype(np.float64).T)
        return acc if b is None else wrap32(acc.astype(np.int64) + b)
    out = x @ w.T
    return (out if b is None else out + b).astype(x.dtype)


def matmul(a, b):
    if a.dtype.kind in "iu":
        return wrap32(np.matmul(a.astype(np.int64), b.astype(np.int64)))
    return np.matmul(a, b)


def requant_epilogue(node, acc, bias=None, residual=None) -> np.ndarray:
    """+ bias, + aligned residual, >> shift, clip, narrow (the fused ops' epilogue)."""
    acc = acc.astype(np.int64)
    if bias is not None:
        acc = wrap32(acc + bias).astype(np.int64)
    if residual is not None:
        aligned = shift_right(residual.astype(np.int32), node.attr("residual_shr", 0))
        acc = wrap32(acc + aligned).astype(np.int64)
    acc = shift_right(wrap32(acc), node.attr("shift", 0))
    acc = np.clip(acc, node.attr("lo", -2 ** 31), node.attr("hi", 2 ** 31 - 1))
    return acc.astype(node.attr("out_dtype", "int8"))


def _packed(node, x, w, compute):
    if node.attr("layout", "plain") != "packed":
        return compute(x, w)
    from vtalab.runtime.layout import on_plain_operands
    return on_plain_operands(x, w, compute)


def qconv2d(node, x, w, bias=None, residual=None):
    acc = _packed(node, x, w, lambda a, b: int_conv(node, a, b))
    return requant_epilogue(node, acc, bias, residual)


def qdense(node, x, w, bias=None, residual=None):
    acc = _packed(node, x, w, lambda a, b: wrap32(a.astype(np.float64) @
                                                  b.astype(np.float64).T))
    return requant_epilogue(node, acc, bias, residual)


def binary(op, a, b):
    if a.dtype.kind in "iu":
        a64 = a.astype(np.int64)
        return wrap32({"add": a64 + b, "sub": a64 - b, "mul": a64 * b}[op])
    return {"add": np.add, "sub": np.subtract, "mul": np.multiply}[op](a, b)


def clip(node, x):
    lo, hi = node.attr("lo"), node.attr("hi")
    if x.dtype.kind == "f":
        lo = -np.inf if lo is None else lo
        hi = np.inf if hi is None else hi
    return np.clip(x, lo, hi).astype(x.dtype)


def max_pool(node, x):
    low = np.finfo(x.dtype).min if x.dtype.kind == "f" else np.iinfo(x.dtype).min
    cols = windows(x, node.attr("kernel"), node.attr("strides", (1, 1)),
                   node.attr("pads", (0,) * 4), node.attr("dilations", (1, 1)), low,
                   bool(node.attr("ceil_mode", 0)))
    return cols.max(axis=(4, 5))


def avg_pool(node, x):
    kernel, strides, pads = node.attr("kernel"), node.attr("strides", (1, 1)), \
        node.attr("pads", (0,) * 4)
    ceil = bool(node.attr("ceil_mode", 0))
    if ceil and node.attr("count_include_pad", 0):  # the overhang must not count
        from .kernels import pool_nd
        return pool_nd(x, "avg", kernel, strides, pads, None, 1, 1)
    sums = windows(x, kernel, strides, pads, ceil=ceil).sum(axis=(4, 5))
    h, w = x.shape[2:]
    if node.attr("count_include_pad", 0):
        ones = np.pad(np.ones((1, 1, h, w), x.dtype), ((0, 0), (0, 0), (pads[0], pads[2]),
                                                       (pads[1], pads[3])), constant_values=1)
        counts = windows(ones, kernel, strides, (0,) * 4, ceil=ceil).sum(axis=(4, 5))
    else:
        counts = windows(np.ones((1, 1, h, w), x.dtype), kernel, strides, pads,
                         ceil=ceil).sum(axis=(4, 5))
    return (sums / counts).astype(x.dtype)


def global_avg_pool(node, x):
    axes = tuple(range(2, x.ndim))
    return x.mean(axis=axes, keepdims=True, dtype=np.float32).astype(x.dtype)


def batch_norm(node, x, scale, bias, mean, var):
    shape = (1, -1) + (1,) * (x.ndim - 2)
    inv = (scale / np.sqrt(var + np.float32(node.attr("epsilon", 1e-5)))).astype(np.float32)
    out = x * inv.reshape(shape) + (bias - mean * inv).astype(np.float32).reshape(shape)
    return out.astype(x.dtype)


def softmax(x, axis):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def pad(node, x):
    pads, rank = node.attr("pads"), x.ndim
    return np.pad(x, [(pads[i], pads[i + rank]) for i in range(rank)],
                  constant_values=np.array(node.attr("value", 0), x.dtype))


def _param(value, ndim, axis):
    p = np.asarray(value)
    if p.ndim == 0 or p.ndim == ndim:
        return p
    shape = [1] * ndim
    shape[axis % ndim] = -1
    return p.reshape(shape)


def quantize(node, x):
    info = np.iinfo(node.attr("dtype", "int8"))
    axis = node.attr("axis", 1)
    s = _param(np.asarray(node.attr("scale"), np.float32), x.ndim, axis)
    zp = _param(node.attr("zero_point", 0), x.ndim, axis).astype(np.float64)
    q = np.rint(x.astype(np.float32) / s).astype(np.float64) + zp
    return np.clip(q, info.min, info.max).astype(node.attr("dtype", "int8"))


def dequantize(node, x):
    axis = node.attr("axis", 1)
    s = _param(np.asarray(node.attr("scale"), np.float32), x.ndim, axis)
    zp = _param(node.attr("zero_point", 0), x.ndim, axis).astype(np.int32)
    return ((x.astype(np.int32) - zp).astype(np.float32) * s).astype(np.float32)
