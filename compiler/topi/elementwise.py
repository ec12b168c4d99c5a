"""Elementwise and broadcast operations on the accumulator (VTA's vector-add tutorial).

a (NB, B, BO) int32 and b (NB, B, BO) or, broadcast, (1, B, BO) int32 are loaded into
acc; out = requant(a op b) (NB, B, BO) int8, with op one of add, mul, min, max.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from vtalab.spec import Config
from vtalab.spec.isa import alu_mul, wrap_signed

from .. import te
from ..errors import ShapeError
from .common import Requant, divides, divisors

_OPS = {"add": lambda x, y: x + y, "mul": lambda x, y: x * y,
        "min": lambda x, y: te.min(x, y), "max": lambda x, y: te.max(x, y)}


@dataclass(frozen=True)
class ElementwiseKnobs:
    tile: int = 1          # blocks per tile
    vthreads: int = 1


def elementwise_space(cfg: Config, blocks: int) -> dict:
    return {"tile": divisors(blocks), "vthreads": [1, 2, 4]}


def elementwise(cfg: Config, blocks: int, op: str = "add", broadcast: bool = False,
                rq: Requant = Requant(bias=False), knobs=ElementwiseKnobs()):
    if op not in _OPS:
        raise ShapeError(f"elementwise op must be one of {sorted(_OPS)}, not {op!r}")
    B, BO = cfg.batch, cfg.block_out
    a = te.placeholder((blocks, B, BO), "int32", "a")
    b = te.placeholder((1 if broadcast else blocks, B, BO), "int32", "b")
    shape = (blocks, B, BO)
    fn = _OPS[op]
    res = te.compute(shape, lambda i, x, y: fn(a[i, x, y], b[0 if broadcast else i, x, y]), op)
    stages = [res]
    cur = res
    if rq.shift:
        prev = cur
        cur = te.compute(shape, lambda *i: prev(*i) >> rq.shift if rq.shift > 0
                         else prev(*i) << -rq.shift, "shift")
        stages.append(cur)
    last0 = cur
    cur = te.compute(shape, lambda *i: te.max(te.min(last0(*i), rq.hi), rq.low), "clip")
    stages.append(cur)
    last = cur
    out = te.compute(shape, lambda *i: last(*i).astype("int8"), "out")
    divides(knobs.tile, "tile", blocks, "blocks")
    divides(knobs.vthreads, "vthreads", blocks // knobs.tile, "tiles")
    s = te.create_schedule(out)
    a_buf = s.cache_read(a, "acc", [res])
    b_buf = s.cache_read(b, "acc", [res])
    for t in stages:
        s[t].set_scope("acc")
    i, x, y = s[out].op.axes
    io, ii = s[out].split(i, knobs.tile)
    vt, io = s[out].split(io, nparts=knobs.vthreads)
    s[out].vthread(vt)
    for t in [a_buf, b_buf] + stages:
        s[t].compute_at(s[out], io)
    for t in (a_buf, b_buf):
        s[t].pragma(s[t].op.axes[0], "dma_copy")
    for t in stages:
        s[t].pragma(s[t].op.axes[0], "alu")
    s[out].pragma(ii, "dma_copy")
    return s, [a, b, out]


def elementwise_reference(a, b, op: str, rq: Requant, cfg: Config) -> np.ndarray:
    a64, b64 = a.astype(np.int64), b.astype(np.int64)
    if op == "mul":
        r = alu_mul(cfg, a64, b64)
    else:
        r = {"add": a64 + b64, "min": np.minimum(a64, b64), "max": np.maximum(a64, b64)}[op]
    r = wrap_signed(r, cfg.acc_bits).astype(np.int32)
    return rq.numpy(r, None)
