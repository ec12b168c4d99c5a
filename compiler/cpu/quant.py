"""int8 quantisation on the CPU (ONNX QuantizeLinear / DequantizeLinear semantics).

Scales and zero points are 1-element (per tensor) or per-channel arrays along ``axis``;
they are kernel arguments, so one compiled kernel serves every scale. Rounding is
half-to-even (``llvm.roundeven``), as numpy and onnxruntime round.
``requantize_shift`` is the accelerator's power-of-two form: add bias, arithmetic shift
right with rounding, clip to int8.
"""
from __future__ import annotations

import numpy as np

from .. import te
from ..errors import ShapeError
from .common import as_array, compiled, schedule_elementwise


def _param_index(shape, axis, n):
    if n == 1:
        return lambda idx: (0,)
    if axis is None or shape[axis] != n:
        raise ShapeError(f"per-channel parameters must have {shape[axis] if axis is not None else 1} "
                         f"entries along axis {axis}, not {n}")
    return lambda idx: (idx[axis],)


def _kernel(name, x, params, fn, out_dtype, axis, target):
    x = as_array(x, name="x")
    params = [as_array(p, dt, pname).reshape(-1) for p, dt, pname in params]
    axis = None if axis is None else axis % x.ndim
    key = (name, x.shape, x.dtype.name, tuple(p.shape + (p.dtype.name,) for p in params), axis)

    def make():
        xt = te.placeholder(x.shape, x.dtype.name, "x")
        pts = [te.placeholder(p.shape, p.dtype.name, f"p{k}") for k, p in enumerate(params)]
        where = [_param_index(x.shape, axis, p.shape[0]) for p in params]

        def body(*i):
            return fn(xt[i], *[t[w(i)] for t, w in zip(pts, where)])
        out = te.compute(x.shape, body, name=name, dtype=out_dtype)
        s = te.create_schedule(out)
        schedule_elementwise(s, out, target)
        return s, [xt] + pts + [out], name
    k = compiled(key, make, target)
    out = np.empty(x.shape, out_dtype)
    k(x, *params, out)
    return out


def _round_clip(v, zp, lo=-128, hi=127):
    r = te.call("round", v) + zp.astype("float32")
    return te.min(te.max(r, te.cast("float32", lo)), te.cast("float32", hi)).astype("int8")


def quantize(x, scale, zero_point=0, axis=None, target=None) -> np.ndarray:
    """float32 -> int8: clip(round(x / scale) + zero_point, -128, 127)."""
    return _kernel("quantize", as_array(x, np.float32, "x"),
                   [(scale, np.float32, "scale"), (zero_point, np.int32, "zero_point")],
                   lambda v, s, z: _round_clip(v / s, z), "int8", axis, target)


def dequantize(q, scale, zero_point=0, axis=None, target=None) -> np.ndarray:
    """int8/int32 -> float32: (q - zero_point) * scale."""
    q = as_array(q, name="q")
    if q.dtype not in (np.int8, np.int32):
        raise ShapeError(f"dequantize input must be int8 or int32, not {q.dtype}")
    return _kernel("dequantize", q,
                   [(scale, np.float32, "scale"), (zero_point, np.int32, "zero_point")],
                   lambda v, s, z: (v.astype("int32") - z).astype("float32") * s,
                   "float32", axis, target)


def requantize(x, scale_in, zp_in, scale_out, zp_out, axis=None, target=None) -> np.ndarray:
    """int32/int8 -> int8 with a float multiplier scale_in / scale_out (half-to-even)."""
    x = as_array(x, name="x")
    mult = np.asarray(scale_in, np.float32) / np.asarray(scale_out, np.float32)
    return _kernel("requantize", x,
                   [(mult, np.float32, "multiplier"), (zp_in, np.int32, "zp_in"),
                    (zp_out, np.int32, "zp_out")],
                   lambda v, m, zi, zo: _round_clip(
                       (v.astype("int32") - zi).astype("float32") * m, zo),
                   "int8", axis, target)


def requantize_shift(acc, shift: int, bias=None, relu=False, axis=1, target=None) -> np.ndarray:
    """int32 accumulators -> int8: clip((acc + bias + 2^(shift-1)) >> shift, lo, 127)."""
    acc = as_array(acc, np.int32, "acc")
    if not isinstance(shift, int) or not 0 <= shift < 32:
        raise ShapeError(f"shift must be an int in 0..31, not {shift!r}")
    bias = np.zeros(1, np.int32) if bias is None else bias
    half = (1 << (shift - 1)) if shift else 0
    lo = 0 if relu else -128

    def fn(v, b):
        r = (v + b + half) >> shift
        return te.min(te.max(r, te.cast("int32", lo)), te.cast("int32", 127)).astype("int8")
    return _kernel(f"requantize_shift_{shift}_{relu}", acc, [(bias, np.int32, "bias")], fn,
                   "int8", axis, target)
