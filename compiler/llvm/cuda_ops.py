"""CUDA schedules for matmul and conv2d: the CPU library's compute declarations, bound to
blocks and threads, lowered to PTX by ``nvptx.py``.

matmul: a 16x16 thread block covers a 16*rows x 16 output tile; each thread accumulates
``rows`` outputs (strided by 16 rows) in registers over k. conv2d (NCHW): the padded input
is one stage, then every output element is one thread (blocks of 256) reducing over
(ic, kh, kw) in a register.
"""
from __future__ import annotations

from .. import te
from ..cpu.conv import conv2d_nchw_compute
from ..cpu.common import padding4, pair, pick_factor
from ..cpu.dense import matmul_compute
from ..target import CudaTarget
from ..te.build import lower_schedule
from .nvptx import CudaModule, build_cuda

THREADS = 256


def _bind_flat(stage, axes, threads=THREADS):
    """One thread per element; the block size divides the element count, because the
    lowering guards partial tiles of root axes only (not of fused ones)."""
    fused = axes[0]
    for ax in axes[1:]:
        fused = stage.fuse(fused, ax)
    bx, tx = stage.split(fused, pick_factor(fused.extent, threads))
    stage.bind(bx, "blockIdx.x")
    stage.bind(tx, "threadIdx.x")


def matmul_cuda_func(M, K, N, dtype="float32", rows: int = 4):
    a = te.placeholder((M, K), dtype, "a")
    b = te.placeholder((K, N), dtype, "b")
    mm, out = matmul_compute(a, b)
    s = te.create_schedule(out)
    local = s.cache_write(mm, "local")
    st = s[out]
    i, j = st.leaf_iter_vars
    i1, ir = st.split(i, rows)        # inner split first: the root guard i < M covers
    io, iy = st.split(i1, 16)         # every partial tile below it
    jo, jx = st.split(j, 16)
    st.reorder(io, jo, iy, jx, ir)
    st.bind(io, "blockIdx.y")
    st.bind(jo, "blockIdx.x")
    st.bind(iy, "threadIdx.y")
    st.bind(jx, "threadIdx.x")
    ls = s[local]
    li, lj, k = ls.leaf_iter_vars
    ls.reorder(k, li, lj)
    ls.compute_at(st, jx)
    ls.unroll(li)
    return lower_schedule(s, [a, b, out], "matmul_cuda")


def conv2d_cuda_func(x_shape, w_shape, dtype="float32", stride=1, padding=0, dilation=1,
                     groups=1):
    x = te.placeholder(x_shape, dtype, "x")
    w = te.placeholder(w_shape, dtype, "w")
    xp, conv, out = conv2d_nchw_compute(x, w, pair(stride, "stride"), padding4(padding),
                                        pair(dilation, "dilation"), groups)
    s = te.create_schedule(out)
    if xp.op is not x.op:
        _bind_flat(s[xp], list(s[xp].leaf_iter_vars))
    st = s[out]
    spatial = [iv for iv in st.leaf_iter_vars if iv.kind != "reduce"]
    _bind_flat(st, spatial)
    return lower_schedule(s, [x, w, out], "conv2d_cuda")


def matmul_cuda(M, K, N, sm: int = 80, dtype="float32") -> CudaModule:
    return build_cuda(matmul_cuda_func(M, K, N, dtype), CudaTarget(sm))


def conv2d_cuda(x_shape, w_shape, sm: int = 80, **kw) -> CudaModule:
    return build_cuda(conv2d_cuda_func(x_shape, w_shape, **kw), CudaTarget(sm))
