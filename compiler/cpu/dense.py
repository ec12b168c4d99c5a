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
from .common import as_array, compiled, pick_factor, pick_lanes, vector_lanes
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


def dense_block(N: int, target=None) -> int:
    """Output features per packed weight block: whole vectors, as many as registers allow,
    so each output tile streams one contiguous block of the packed weight."""
    full = vector_lanes(target)
    lanes = pick_lanes(N, full)
    regs = 28 if full >= 16 else 12                 # AVX-512 has 32 vector registers
    return lanes * pick_factor(N // lanes, max(1, regs // -(-lanes // full)))


def pack_dense_weight(w, block: int | None = None, target=None) -> np.ndarray:
    """ONNX/PyTorch weight w[N, K] -> blocks [N/nb, K, nb]: every output tile reads one
    contiguous stream (done once, at compile time, for constant weights)."""
    w = as_array(w, name="w")
    N, K = w.shape
    nb = block or dense_block(N, target)
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


def schedule_dense(s, mm, out, target=None):
    """Each output tile (up to 4 rows x one weight block) accumulates in registers."""
    local = s.cache_write(mm, "local")
    if out is not mm:
        s[mm].compute_inline()
    full = vector_lanes(target, local.dtype)
    st = s[out]
    m, no, ni = st.leaf_iter_vars
    lanes = pick_lanes(ni.extent, full)
    mo, mi = st.split(m, pick_factor(m.extent, max(1, 28 // max(1, ni.extent // lanes))))
    nio, nii = st.split(ni, lanes)
    st.reorder(no, mo, mi, nio, nii)
    st.unroll(mi)
    st.vectorize(nii)
    fused = st.fuse(no, mo)
    if fused.extent > 1:
        st.parallel(fused)
    ls = s[local]
    lm, lno, lni, k = ls.leaf_iter_vars
    lo, li = ls.split(lni, lanes)
    ls.reorder(lno, k, lm, lo, li)
    ls.compute_at(st, fused)
    ls.unroll(lm)
    ls.unroll(lo)
    ls.vectorize(li)


def dense_kernel(M, K, N, block, dtype="float32", bias=False, relu=False, target=None):
    """Compiled kernel (x[M,K], wp[N/nb,K,nb][, bias[N]], out[M,N/nb,nb])."""
    key = ("dense", M, K, N, block, str(dtype), bias, relu)

    def make():
        x = te.placeholder((M, K), dtype, "x")
        wp = te.placeholder((N // block, K, block), dtype, "w")
        bb = te.placeholder((N,), _acc(dtype), "bias") if bias else None
        mm, out = dense_compute(x, wp, bb, relu)
        s = te.create_schedule(out)
        schedule_dense(s, mm, out, target)
        return s, [x, wp] + ([bb] if bias else []) + [out], "dense"
    return compiled(key, make, target)


def dense(x, w, bias=None, relu=False, packed=None, target=None) -> np.ndarray:
    """x[M, K] @ w[N, K]^T (+ bias, ReLU); ``packed`` = pack_dense_weight(w) if known."""
    x = as_array(x, name="x")
    if x.ndim != 2:
        raise ShapeError(f"dense input must be 2-D, not {x.shape}")
    wp = packed if packed is not None else pack_dense_weight(as_array(w, x.dtype, "w"),
                                                             target=target)
    M, K = x.shape
    NO, K2, nb = wp.shape
    k = dense_kernel(M, K2, NO * nb, nb, x.dtype.name, bias is not None, relu, target)
    out = np.empty((M, NO, nb), _acc(x.dtype.name))
    extra = [as_array(bias, out.dtype, "bias")] if bias is not None else []
    k(x, wp, *extra, out)
    return out.reshape(M, NO * nb)
