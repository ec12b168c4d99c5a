"""Shared pieces of the templates: the requantisation epilogue and knob helpers."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import ScheduleError
from ..vta.intrin import gemm_intrinsic
from .. import te


@dataclass(frozen=True)
class Requant:
    """out = clip((acc + bias) >> shift, lo, hi) narrowed to int8 (bias optional)."""
    shift: int = 0
    lo: int = -128
    hi: int = 127
    bias: bool = True
    relu: bool = False

    @property
    def low(self) -> int:
        return max(self.lo, 0) if self.relu else self.lo

    def numpy(self, acc: np.ndarray, bias: np.ndarray | None) -> np.ndarray:
        x = acc.astype(np.int64)
        if bias is not None:
            x = x + bias
        x = (x.astype(np.int32) >> self.shift) if self.shift >= 0 else (x.astype(np.int32) << -self.shift)
        return np.clip(x, self.low, self.hi).astype(np.int8)


def epilogue(acc, bias, rq: Requant, shape, bias_index, out_dtype="int8"):
    """The acc-scope stage of the epilogue and the final narrowing stage.

    One stage computes ``clip((acc + bias) >> shift, low, hi)``: the ALU matcher turns it
    into a single SAT micro-op per entry when the bounds are within int8 (plus a MIN/MAX
    for narrower bounds), or into ADD, SHR, MIN, MAX otherwise."""
    shift = rq.shift

    def requant(*i):
        v = acc(*i)
        if rq.bias:
            v = v + bias(*bias_index(i))
        if shift:
            v = v >> shift if shift > 0 else v << -shift
        return te.max(te.min(v, rq.hi), rq.low)
    cur = te.compute(shape, requant, "requant")
    out = te.compute(shape, lambda *i: cur(*i).astype(out_dtype), "out")
    return [cur], out


def divides(n: int, what: str, total: int, total_what: str) -> None:
    if n <= 0 or total % n:
        raise ScheduleError(f"{what} must divide {total_what} ({total}), not {n}")


def divisors(n: int, limit: int | None = None) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0 and (limit is None or d <= limit)]


def place_acc_stages(s, out, at, acc, stages, operands, cfg=None, vectors_once=False) -> None:
    """Put the accumulator (None: none) and its epilogue stages at loop ``at`` of ``out``.

    ``operands`` are (placeholder, reading stage) pairs loaded into the acc buffer there
    (a bias, a residual), or (placeholder, reading stage, scope) for the inp / wgt
    operands of a reduction stage: each gets a DMA copy. With ``vectors_once``,
    per-channel vectors (rank-3 acc operands: bias, shift amounts) load whole, once,
    before everything (each LOAD ACC stops the compute module and waits for the bus
    behind the load module's tiles: conv_19 spent 18,947 cycles in 32 per-tile bias
    loads). Elementwise epilogue stages run on the ALU; a reduction stage (a residual
    times an identity weight) is a GEMM.
    """
    for placeholder, reader, *scope in operands:
        buf = s.cache_read(placeholder, scope[0] if scope else "acc", [reader])
        if vectors_once and not scope and len(placeholder.shape) == 3:
            s[buf].compute_root()
        else:
            s[buf].compute_at(s[out], at)
        s[buf].pragma(s[buf].op.axes[0], "dma_copy")
    for t in ([acc] if acc is not None else []) + stages:
        s[t].set_scope("acc")
        s[t].compute_at(s[out], at)
    for t in stages:
        if s[t].op.reduce_axes:
            axes, (ko, ki) = s[t].op.axes, s[t].op.reduce_axes
            s[t].reorder(ko, *axes, ki)     # ko (extent 1): the init (a reset) outside
            s[t].tensorize(axes[-2], gemm_intrinsic(cfg))
        else:
            s[t].pragma(s[t].op.axes[0], "alu")

