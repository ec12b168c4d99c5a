"""Matrix multiply and dense (fully connected) layers on the CPU.

``matmul`` computes a[M, K] @ b[K, N]. Schedule: an (m_tile x lanes) output tile lives in
vector registers while k runs; tiles are spread over threads. ``dense`` takes ONNX/PyTorch
weights w[N, K]; they are packed once to [K, N] (``pack_dense_weight``, done at compile time
for constant weights) so the same schedule reads contiguous rows.
"""
from __future__ import annotations

import numpy as np

from .. import te
from ..errors import ShapeError
from ..te.build import lower_schedule
from .common import as_array, compiled, compiled_func, pick_factor, pick_lanes, vector_lanes
from .knobs import check_divides, dense_block, dense_knobs, knob_key, resolve
from .transform import transpose


def _acc(dtype) -> str:
    return "float32" if str(dtype).startswith("float") else "int32"


def matmul_compute(a, b, bias=None, relu=False):
    M, K = a.shape
    K2, N = b.shape
    if K2 != K:
        raise ShapeError(f"matmul inner dimensions must match, not {a.shape} @ {b.shape}")
    acc = _acc(a.dtype)
    k = te.reduce_axis(K, "k")

    def body(i, j):
        x, y = a[i, k], b[k, j]
        if str(a.dtype) != acc:
            x, y = x.astype(acc), y.astype(acc)
        return te.sum(x * y, axis=k)
    mm = te.compute((M, N), body, name="matmul")
    if bias is None and not relu:
        return mm, mm

    def epi(i, j):
        v = mm[i, j] + bias[j] if bias is not None else mm[i, j]
        return te.max(v, te.cast(v.dtype, 0)) if relu else v
    return mm, te.compute((M, N), epi, name="dense_out")


def schedule_matmul(s, mm, out, target=None):
    local = s.cache_write(mm, "local")
    if out is not mm:
        s[mm].compute_inline()
    st = s[out]
    i, j = st.leaf_iter_vars
    lanes = pick_lanes(j.extent, vector_lanes(target, local.dtype))
    nvec = -(-lanes // vector_lanes(target, local.dtype))
    m_tile = pick_factor(i.extent, max(1, 12 // nvec))
    io, ii = st.split(i, m_tile)
    jo, ji = st.split(j, lanes)
    st.reorder(io, jo, ii, ji)
    st.unroll(ii)
    st.vectorize(ji)
    fused = st.fuse(io, jo)
    if fused.extent > 1:
        st.parallel(fused)
    ls = s[local]
    li, lj, k = ls.leaf_iter_vars
    ls.reorder(k, li, lj)
    ls.compute_at(st, fused)
    ls.unroll(li)
    ls.vectorize(lj)


def matmul_kernel(M, K, N, dtype="float32", bias=False, relu=False, target=None):
    """Compiled kernel (a[M,K], b[K,N][, bias[N]], out[M,N])."""
    key = ("matmul", M, K, N, str(dtype), bias, relu)

    def make():
        a = te.placeholder((M, K), dtype, "a")
        b = te.placeholder((K, N), dtype, "b")
        bb = te.placeholder((N,), _acc(dtype), "bias") if bias else None
        mm, out = matmul_compute(a, b, bb, relu)
        s = te.create_schedule(out)
        schedule_matmul(s, mm, out, target)
        return s, [a, b] + ([bb] if bias else []) + [out], "matmul"
    return compiled(key, make, target)


def matmul(a, b, target=None) -> np.ndarray:
    """a[M, K] @ b[K, N] (float32, or int8 accumulating to int32)."""
    a = as_array(a, name="a")
    b = as_array(b, a.dtype, "b")
    if a.ndim != 2 or b.ndim != 2:
        raise ShapeError(f"matmul operands must be 2-D, not {a.shape} and {b.shape}")
    if a.shape[1] != b.shape[0]:
        raise ShapeError(f"matmul inner dimensions must match, not {a.shape} @ {b.shape}")
    k = matmul_kernel(a.shape[0], a.shape[1], b.shape[1], a.dtype.name, target=target)
    out = np.empty((a.shape[0], b.shape[1]), _acc(a.dtype.name))
    k(a, b, out)
    return out


def pack_dense_weight(w, block: int | None = None, target=None) -> np.ndarray:
    """ONNX/PyTorch weight w[N, K] -> blocks [N/nb, K, nb]: every output tile reads one
    contiguous stream (done once, at compile time, for constant weights)."""
    w = as_array(w, name="w")
    N, K = w.shape
    nb = check_divides("dense block", block or dense_block(N, target), N)
    return transpose(w.reshape(N // nb, nb, K), (0, 2, 1), target=target)


def dense_compute(x, wp, bias=None, relu=False):
    M, K = x.shape
    NO, K2, nb = wp.shape
    if K2 != K:
        raise ShapeError(f"dense weight must have {K} input features, not {K2}")
    acc = _acc(x.dtype)
    k = te.reduce_axis(K, "k")

    def body(m, no, ni):
        a, b = x[m, k], wp[no, k, ni]
        if str(x.dtype) != acc:
            a, b = a.astype(acc), b.astype(acc)
        return te.sum(a * b, axis=k)
    mm = te.compute((M, NO, nb), body, name="dense")
    if bias is None and not relu:
        return mm, mm

    def epi(m, no, ni):
        v = mm[m, no, ni] + bias[no * nb + ni] if bias is not None else mm[m, no, ni]
        return te.max(v, te.cast(v.dtype, 0)) if relu else v
    return mm, te.compute((M, NO, nb), epi, name="dense_out")


def schedule_dense(s, mm, out, target=None, knobs=None):
    """Each output tile (``m_tile`` rows x one weight block) accumulates in registers;
    ``knobs``: see ``knobs.dense_knobs`` (None: the heuristic for the block)."""
    local = s.cache_write(mm, "local")
    if out is not mm:
        s[mm].compute_inline()
    st = s[out]
    m, no, ni = st.leaf_iter_vars
    kn = resolve(dense_knobs(m.extent, ni.extent, local.dtype, target), knobs, "dense")
    lanes = check_divides("dense lanes", kn["lanes"], ni.extent)
    mo, mi = st.split(m, check_divides("dense m_tile", kn["m_tile"], m.extent))
    nio, nii = st.split(ni, lanes)
    st.reorder(no, mo, mi, nio, nii)
    st.unroll(mi)
    st.vectorize(nii)
    fused = st.fuse(no, mo)
    if kn["parallel"] and fused.extent > 1:
        st.parallel(fused)
    ls = s[local]
    lm, lno, lni, k = ls.leaf_iter_vars
    lo, li = ls.split(lni, lanes)
    unroll_k = check_divides("dense k_unroll", kn["k_unroll"], k.extent)
    if unroll_k > 1:
        ko, ki = ls.split(k, unroll_k)
        ls.reorder(lno, ko, ki, lm, lo, li)
        ls.unroll(ki)
    else:
        ls.reorder(lno, k, lm, lo, li)
    ls.compute_at(st, fused)
    ls.unroll(lm)
    ls.unroll(lo)
    ls.vectorize(li)


def dense_func(M, K, N, block, dtype="float32", bias=False, relu=False, target=None,
               knobs=None):
    """The lowered PrimFunc (x[M,K], wp[N/nb,K,nb][, bias[N]], out[M,N/nb,nb])."""
    x = te.placeholder((M, K), dtype, "x")
    wp = te.placeholder((N // block, K, block), dtype, "w")
    bb = te.placeholder((N,), _acc(dtype), "bias") if bias else None
    mm, out = dense_compute(x, wp, bb, relu)
    s = te.create_schedule(out)
    schedule_dense(s, mm, out, target, knobs)
    return lower_schedule(s, [x, wp] + ([bb] if bias else []) + [out], "dense")


def dense_kernel(M, K, N, block, dtype="float32", bias=False, relu=False, target=None,
                 knobs=None):
    """Compiled kernel (x[M,K], wp[N/nb,K,nb][, bias[N]], out[M,N/nb,nb]); ``knobs``: the
    schedule's (``knobs.dense_knobs``), None for the heuristic."""
    check_divides("dense block", block, N)
    kn = resolve(dense_knobs(M, block, _acc(dtype), target), knobs, "dense")
    key = ("dense", M, K, N, block, str(dtype), bias, relu, knob_key(kn))
    return compiled_func(key, lambda: dense_func(M, K, N, block, dtype, bias, relu, target,
                                                 kn), target)


def dense(x, w, bias=None, relu=False, packed=None, target=None, knobs=None) -> np.ndarray:
    """x[M, K] @ w[N, K]^T (+ bias, ReLU); ``packed`` = pack_dense_weight(w) if known.
    ``knobs``: the schedule's plus ``block`` (outputs per packed weight block)."""
    x = as_array(x, name="x")
    if x.ndim != 2:
        raise ShapeError(f"dense input must be 2-D, not {x.shape}")
    knobs = dict(knobs or {})
    block = knobs.pop("block", None)
    wp = packed if packed is not None else pack_dense_weight(as_array(w, x.dtype, "w"), block,
                                                             target=target)
    M, K = x.shape
    NO, K2, nb = wp.shape
    if block is not None and nb != block:
        raise ShapeError(f"packed dense weight must have blocks of {block}, not {nb}")
    k = dense_kernel(M, K2, NO * nb, nb, x.dtype.name, bias is not None, relu, target, knobs)
    out = np.empty((M, NO, nb), _acc(x.dtype.name))
    extra = [as_array(bias, out.dtype, "bias")] if bias is not None else []
    k(x, wp, *extra, out)
    return out.reshape(M, NO * nb)
