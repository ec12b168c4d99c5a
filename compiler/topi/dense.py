"""Blocked int8 dense on packed layouts with a fused requantisation epilogue.

data (M/B, K/BI, B, BI) int8, weight (N/BO, K/BI, BO, BI) int8, bias (N/BO, B, BO) int32
-> out (M/B, N/BO, B, BO) int8, where B, BI, BO are the Config's batch, block_in, block_out.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from vtalab.spec import Config
from vtalab.spec.isa import wrap_signed

from .. import te
from ..errors import ShapeError
from ..vta.intrin import gemm_intrinsic
from .common import Requant, divides, divisors, epilogue, place_acc_stages


@dataclass(frozen=True)
class DenseKnobs:
    """Tunable knobs (in blocks): output tile, reduction step, loop order, virtual threads."""
    tile_m: int = 1
    tile_n: int = 1
    tile_k: int = 1
    order: str = "mn"          # "mn": rows outer, "nm": columns outer
    vthreads: int = 1


def dense_space(cfg: Config, m: int, k: int, n: int) -> dict:
    """The knob values legal for this shape: the search space an autotuner explores."""
    mb, kb, nb = m // cfg.batch, k // cfg.block_in, n // cfg.block_out
    return {"tile_m": divisors(mb), "tile_n": divisors(nb), "tile_k": divisors(kb),
            "order": ["mn", "nm"], "vthreads": [1, 2, 4]}


def _check(cfg: Config, m: int, k: int, n: int) -> tuple[int, int, int]:
    for what, v, blk, p in (("M", m, cfg.batch, "batch"), ("K", k, cfg.block_in, "block_in"),
                            ("N", n, cfg.block_out, "block_out")):
        if v <= 0 or v % blk:
            raise ShapeError(f"dense {what} must be a positive multiple of {p} ({blk}), not {v}")
    return m // cfg.batch, k // cfg.block_in, n // cfg.block_out


def dense(cfg: Config, m: int, k: int, n: int, rq: Requant = Requant(), knobs=DenseKnobs()):
    """(schedule, [data, weight, bias?, out]) for a dense layer on the accelerator."""
    mb, kb, nb = _check(cfg, m, k, n)
    B, BI, BO = cfg.batch, cfg.block_in, cfg.block_out
    data = te.placeholder((mb, kb, B, BI), "int8", "data")
    weight = te.placeholder((nb, kb, BO, BI), "int8", "weight")
    bias = te.placeholder((nb, B, BO), "int32", "bias")
    ko, ki = te.reduce_axis(kb, "ko"), te.reduce_axis(BI, "ki")
    shape = (mb, nb, B, BO)
    acc = te.compute(shape, lambda i, j, x, y: te.sum(
        data[i, ko, x, ki].astype("int32") * weight[j, ko, y, ki].astype("int32"),
        axis=[ko, ki]), "gemm")
    stages, out = epilogue(acc, bias, rq, shape, lambda i: (i[1], i[2], i[3]))
    operands = [(bias, stages[0])] if rq.bias else []
    sch = schedule_dense(cfg, data, weight, acc, stages, operands, out, knobs, (mb, kb, nb))
    args = [data, weight] + ([bias] if rq.bias else []) + [out]
    return sch, args


def schedule_dense(cfg, data, weight, acc, stages, operands, out, kn: DenseKnobs, blocks):
    """The accelerator schedule of a packed dense; ``operands`` as in place_acc_stages.
    Axes of ``out`` before its four (a batch: one dense per index) are outermost loops."""
    mb, kb, nb = blocks
    divides(kn.tile_m, "tile_m", mb, "M blocks")
    divides(kn.tile_n, "tile_n", nb, "N blocks")
    divides(kn.tile_k, "tile_k", kb, "K blocks")
    divides(kn.vthreads, "vthreads", nb // kn.tile_n, "N tiles")
    s = te.create_schedule(out)
    data_buf = s.cache_read(data, "inp", [acc])
    wgt_buf = s.cache_read(weight, "wgt", [acc])
    *batch, i, j, x, y = s[out].op.axes
    io, ii = s[out].split(i, kn.tile_m)
    jo, ji = s[out].split(j, kn.tile_n)
    jv, jo = s[out].split(jo, nparts=kn.vthreads)
    outer = [io, jv, jo] if kn.order == "mn" else [jv, jo, io]
    s[out].reorder(*batch, *outer, ii, ji, x, y)
    s[out].vthread(jv)
    place_acc_stages(s, out, outer[-1], acc, stages, operands, cfg, vectors_once=True)
    *acc_batch, gi, gj, gx, gy = s[acc].op.axes
    ko, ki = s[acc].op.reduce_axes
    koo, koi = s[acc].split(ko, kn.tile_k)
    s[acc].reorder(*acc_batch, koo, gi, gj, koi, gx, gy, ki)
    for buf in (data_buf, wgt_buf):
        s[buf].compute_at(s[acc], koo)
        s[buf].pragma(s[buf].op.axes[0], "dma_copy")
    s[acc].tensorize(gx, gemm_intrinsic(cfg))
    s[out].pragma(ii, "dma_copy")
    return s


def dense_reference(data, weight, bias, rq: Requant, acc_bits: int = 32) -> np.ndarray:
    """numpy int8 reference on the packed layouts (sums wrap to ``acc_bits``)."""
    acc = np.einsum("mkxi,nkyi->mnxy", data.astype(np.int64), weight.astype(np.int64))
    acc = wrap_signed(acc, acc_bits).astype(np.int32)
    return rq.numpy(acc, bias[None] if (bias is not None and rq.bias) else None)
