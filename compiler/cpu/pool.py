"""Pooling on the CPU: max / average (NCHW, any kernel, stride, padding), global pooling.

Max pooling runs separably where it can (``maxpool.py``: a vertical max over contiguous
input rows, then a strided horizontal max). Other windowed pools pad once (with -inf for
max), then each output row tile reduces over the window in vector registers (strided rows
become wide loads + a shuffle). Global pools reduce each channel with ``lanes`` partial
sums in a vector, then fold the lanes.
"""
from __future__ import annotations

import numpy as np

from .. import te
from ..errors import ShapeError
from ..te.build import lower_schedule
from .common import as_array, compiled_func, pair, padding4, vector_lanes
from .knobs import (POOL_PARALLEL, check_choice, check_divides, check_positive,
                    global_pool_knobs, knob_key, resolve, separable_pool_knobs,
                    window_pool_knobs)
from .conv import out_size, pad_nchw
from .maxpool import max_pool_func, separable


def pool2d_compute(x, kind, kernel, stride, pads, dilation=(1, 1), count_include_pad=False):
    N, C, H, W = x.shape
    (KH, KW), (sh, sw), (dh, dw) = kernel, stride, dilation
    OH = out_size(H, KH, sh, dh, pads[0], pads[2])
    OW = out_size(W, KW, sw, dw, pads[1], pads[3])
    low = x.dtype.min_value if kind == "max" else 0
    xp = pad_nchw(x, pads, low, name="xpad") if any(pads) else x
    kh, kw = te.reduce_axis(KH, "kh"), te.reduce_axis(KW, "kw")
    reduce = te.max if kind == "max" else te.sum

    def body(n, c, oh, ow):
        return reduce(xp[n, c, oh * sh + kh * dh, ow * sw + kw * dw], axis=[kh, kw])
    pooled = te.compute((N, C, OH, OW), body, name="pool")
    if kind == "max":
        return xp, pooled, pooled
    if count_include_pad or not any(pads):
        return xp, pooled, te.compute(pooled.shape, lambda *i: pooled[i] / float(KH * KW),
                                      name="avg")

    def count(o, s, k, before, size):
        lo = te.max(o * s - before, 0)
        hi = te.min(o * s - before + k, size)
        return hi - lo

    def avg(n, c, oh, ow):
        cnt = count(oh, sh, KH, pads[0], H) * count(ow, sw, KW, pads[1], W)
        return pooled[n, c, oh, ow] / cnt.astype("float32")
    return xp, pooled, te.compute(pooled.shape, avg, name="avg")


def schedule_pool2d(s, xp, pooled, out, target=None, knobs=None):
    """Per channel plane (in parallel): pad it into a cache-resident scratch plane, then
    reduce each output row tile over the window in vector registers. ``knobs``: see
    ``knobs.window_pool_knobs`` (None: the heuristic)."""
    local = s.cache_write(pooled, "local")
    if out is not pooled:
        s[pooled].compute_inline()
    st = s[out]
    n, c, oh, ow = st.leaf_iter_vars
    ls = s[local]
    ln, lc, loh, low, kh, kw = ls.leaf_iter_vars
    kn = resolve(window_pool_knobs(ow.extent, kw.extent, local.dtype, target), knobs, "pool")
    owo, owi = st.split(ow, check_divides("pool lanes", kn["lanes"], ow.extent))
    st.vectorize(owi)
    plane = st.fuse(n, c)
    if kn["parallel"]:
        st.parallel(plane)
    if xp.op is not out.op and hasattr(xp.op, "axes"):
        ps = s[xp]
        ps.compute_at(st, plane)
        ps.vectorize(ps.split(ps.leaf_iter_vars[-1], vector_lanes(target, xp.dtype))[1])
    ls.reorder(ln, lc, loh, kh, kw, low)
    ls.compute_at(st, owo)
    ls.vectorize(low)
    if kn["unroll_kw"]:
        ls.unroll(kw)


def pool2d_knobs(kind, x_shape, dtype, kernel, stride, pads, dilation, target=None,
                 knobs=None) -> dict:
    """The resolved knobs of a pooling kernel: the separable max pool's
    (``separable_pool_knobs``) or the windowed te schedule's (``window_pool_knobs``)."""
    if separable(kind, x_shape, kernel, stride, pads, dilation):
        return resolve(separable_pool_knobs(dtype, target), knobs, "max_pool2d")
    ow = out_size(x_shape[3], kernel[1], stride[1], dilation[1], pads[1], pads[3])
    return resolve(window_pool_knobs(ow, kernel[1], dtype, target), knobs, f"{kind}_pool2d")


def pool2d_func(kind, x_shape, dtype, kernel, stride, pads, dilation, include, target=None,
                knobs=None):
    """The PrimFunc (x, out) of a pooling (``kernel``, ``stride``, ``dilation``: pairs;
    ``pads``: (top, left, bottom, right))."""
    kn = pool2d_knobs(kind, x_shape, dtype, kernel, stride, pads, dilation, target, knobs)
    if separable(kind, x_shape, kernel, stride, pads, dilation):
        lanes = check_positive("max_pool2d lanes", kn["lanes"])
        return max_pool_func(x_shape, dtype, kernel, stride, pads, lanes,
                             check_choice("max_pool2d parallel", kn["parallel"], POOL_PARALLEL))
    x = te.placeholder(x_shape, dtype, "x")
    xp, pooled, out = pool2d_compute(x, kind, kernel, stride, pads, dilation, include)
    s = te.create_schedule(out)
    schedule_pool2d(s, xp, pooled, out, target, kn)
    return lower_schedule(s, [x, out], f"{kind}_pool2d")


def pool2d_kernel(kind, x_shape, dtype, kernel, stride, pads, dilation, include, target,
                  knobs=None):
    kn = pool2d_knobs(kind, x_shape, dtype, kernel, stride, pads, dilation, target, knobs)
    key = ("pool2d", kind, tuple(x_shape), dtype, kernel, stride, pads, dilation, include,
           knob_key(kn))
    return compiled_func(key, lambda: pool2d_func(kind, x_shape, dtype, kernel, stride, pads,
                                                  dilation, include, target, kn), target)


def _pool(kind, x, kernel, stride, padding, dilation, include, target, knobs):
    x = as_array(x, name="x")
    if x.ndim != 4:
        raise ShapeError(f"pool input must be NCHW (4-D), not {x.shape}")
    if kind == "avg" and not x.dtype.name.startswith("float"):
        raise ShapeError(f"avg_pool2d input must be float, not {x.dtype}")
    kernel = pair(kernel, "kernel")
    stride = pair(stride if stride is not None else kernel, "stride")
    k = pool2d_kernel(kind, x.shape, x.dtype.name, kernel, stride, padding4(padding),
                     pair(dilation, "dilation"), include, target, knobs)
    out = np.empty(k.plan.params[-1].shape, x.dtype)
    k(x, out)
    return out


def max_pool2d(x, kernel, stride=None, padding=0, dilation=1, target=None,
               knobs=None) -> np.ndarray:
    return _pool("max", x, kernel, stride, padding, dilation, True, target, knobs)


def avg_pool2d(x, kernel, stride=None, padding=0, count_include_pad=False,
               target=None, knobs=None) -> np.ndarray:
    return _pool("avg", x, kernel, stride, padding, 1, count_include_pad, target, knobs)


# ---- global pooling --------------------------------------------------------------------

def lane_reduce(x3, kind: str, lanes: int, name: str):
    """(partial[N, C, lanes], out[N, C]) reducing x3[N, C, L] over its last axis."""
    N, C, L = x3.shape
    steps = -(-L // lanes)
    i = te.reduce_axis(steps, "i")
    ident = x3.dtype.min_value if kind == "max" else 0
    reduce = te.max if kind == "max" else te.sum

    def part(n, c, j):
        pos = i * lanes + j
        v = x3[n, c, pos] if L % lanes == 0 else te.select(      # masked tail load
            pos < L, x3[n, c, pos], te.cast(x3.dtype, ident))
        return reduce(v, axis=i)
    partial = te.compute((N, C, lanes), part, name=f"{name}_part")
    j = te.reduce_axis(lanes, "j")
    total = te.compute((N, C), lambda n, c: reduce(partial[n, c, j], axis=j), name=name)
    return partial, total


def global_pool_func(kind, shape, dtype, target=None, knobs=None):
    """The PrimFunc (x[N, C, H*W], out[N, C]) of a global pool."""
    N, C, H, W = shape
    kn = resolve(global_pool_knobs(H * W, dtype, target), knobs, f"global_{kind}_pool")
    x = te.placeholder((N, C, H * W), dtype, "x")
    partial, total = lane_reduce(x, kind, check_positive("global pool lanes", kn["lanes"]),
                                 "gpool")
    out = total if kind == "max" else te.compute(
        (N, C), lambda n, c: total[n, c] * (1.0 / (H * W)), name="gavg")
    s = te.create_schedule(out)
    st = s[out]
    n, c = st.leaf_iter_vars[:2]
    fused = st.fuse(n, c)
    if kn["parallel"] and fused.extent > 1:
        st.parallel(fused)
    for t in ([partial, total] if out is not total else [partial]):
        s[t].compute_at(st, fused)
    ps = s[partial]
    pn, pc, pj, pi = ps.leaf_iter_vars
    ps.reorder(pn, pc, pi, pj)
    ps.vectorize(pj)
    return lower_schedule(s, [x, out], f"global_{kind}_pool")


def global_pool_kernel(kind, shape, dtype, target=None, knobs=None):
    kn = resolve(global_pool_knobs(shape[2] * shape[3], dtype, target), knobs,
                 f"global_{kind}_pool")
    key = ("global_pool", kind, tuple(shape), dtype, knob_key(kn))
    return compiled_func(key, lambda: global_pool_func(kind, shape, dtype, target, kn), target)


def global_avg_pool(x, target=None, knobs=None) -> np.ndarray:
    """[N, C, H, W] -> [N, C, 1, 1] mean over H, W."""
    return _global("avg", x, target, knobs)


def global_max_pool(x, target=None, knobs=None) -> np.ndarray:
    return _global("max", x, target, knobs)


def _global(kind, x, target, knobs):
    x = as_array(x, name="x")
    if x.ndim != 4:
        raise ShapeError(f"global pool input must be NCHW (4-D), not {x.shape}")
    if kind == "avg" and not x.dtype.name.startswith("float"):
        raise ShapeError(f"global_avg_pool input must be float, not {x.dtype}")
    N, C, H, W = x.shape
    k = global_pool_kernel(kind, x.shape, x.dtype.name, target, knobs)
    out = np.empty((N, C), x.dtype)
    k(x.reshape(N, C, H * W), out)
    return out.reshape(N, C, 1, 1)
