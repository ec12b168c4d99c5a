"""Fused accelerator templates: conv2d / dense with the graph's whole requant epilogue.

The graph's `accel_conv2d` / `accel_dense` (compiler/graph/ops.py `_accel`) compute

    acc  = x * w ; acc += bias ; acc += shr(int32(residual), residual_shr)
    acc  = shr(acc, shift) ; out = int8(clip(acc, lo, hi))

compiler/topi's templates cover bias + scalar shift + clip. These declarations add what
the graph needs on top, all on the accumulator: a residual operand (with a scalar
alignment and block_in == block_out: the int8 tile loaded into inp by the load module and
accumulated by one GEMM micro-op per entry against 2**k * identity, k <= 6, then shifted
left by the rest; otherwise an int32 tile loaded into acc by the compute module, aligned
by its own shifts; then added), per-channel shift amounts (acc operands
of SHR, loaded like the bias) and shift amounts beyond the ALU's signed 5-bit field (split
into several SHR steps: x >> a >> b == x >> (a + b), and likewise for left shifts). The
schedules are topi's (same loop structure, knobs and virtual threads) with every acc
operand cache-read next to the bias.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from vtalab.spec import Config
from vtalab.spec.isa import imm_range

from .. import te
from ..errors import LoweringError
from ..topi import Conv2dKnobs, Conv2dShape, DenseKnobs
from ..topi.conv2d import input_stage, schedule_conv2d
from ..topi.dense import schedule_dense

VEC = "vec"  # a shift step whose amount is a per-channel operand vector


@dataclass(frozen=True)
class Epilogue:
    """What the accumulator does after the GEMM. Shift steps: ints (immediates) or VEC."""
    bias: bool = False
    residual: bool = False
    residual_shifts: tuple = ()
    shifts: tuple = ()
    lo: int | None = -128
    hi: int | None = 127
    #: residual as int8 in the inp buffer (loaded by the load module) times 2**k * identity
    #: (the ``residual_eye`` weight, one GEMM micro-op per entry), aligned by
    #: ``residual_shifts``: the value the conv's accumulator starts from (``te.sum(..,
    #: init=)``), so no residual tile and no ADD. False: an int32 tile DMA'd into acc.
    residual_gemm: bool = False

    @property
    def vectors(self) -> int:
        """acc entries per output-channel block besides the residual (bias, shift vectors)."""
        steps = self.residual_shifts + self.shifts
        return int(self.bias) + sum(1 for s in steps if s == VEC)


def split_shift(amount: int, lo: int, hi: int) -> list[int]:
    """Steps within the ALU's shift field [lo, hi] (spec.isa.shift_range) whose sum is
    `amount` (no step for 0)."""
    steps = []
    while amount:
        step = min(max(amount, lo), hi)
        steps.append(step)
        amount -= step
    return steps


def split_shift_vector(amounts: np.ndarray, lo: int, hi: int) -> list[np.ndarray]:
    """Per-channel shift vectors, each within the ALU's field [lo, hi], summing to
    `amounts`."""
    rest = np.asarray(amounts, np.int64).copy()
    chunks = []
    while np.any(rest):
        step = np.clip(rest, lo, hi)
        chunks.append(step.astype(np.int32))
        rest -= step
    return chunks


def residual_start(ep: Epilogue, shape, stages: list, operands: list):
    """The stage a conv's accumulator starts from: the residual x 2**k * I (a GEMM) shifted
    by ``residual_shifts`` (immediates), appended to ``stages``; None without
    ``residual_gemm``. ``acc + shr(r, a)`` in either order: wrapping adds commute."""
    if not (ep.residual and ep.residual_gemm):
        return None
    cur = _residual_gemm(shape, stages, operands)
    for n, amount in enumerate(ep.residual_shifts):
        if amount == VEC:
            raise LoweringError("a residual GEMM's shifts must be immediates, not per-channel")
        cur = te.compute(shape, _shifted_by(cur, amount), f"rshift{n}_step")
        stages.append(cur)
    return cur


def _shifted_by(v, amount: int):
    """v >> amount, or v << -amount for a negative immediate."""
    return lambda *i: v(*i) >> amount if amount > 0 else v(*i) << -amount


def _declare_epilogue(acc, shape, ep: Epilogue, vec_shape, vec_index):
    """(acc-scope stages, [(placeholder, first reader stage)], int8 output); a residual
    GEMM is not here but ``acc``'s start (residual_start).

    The residual's alignment shifts are stages of their own (on the residual tile); all
    the rest is one stage, ``clip(((acc + residual) + bias) >> shifts..., lo, hi)``, whose
    requantisation tail the ALU matcher folds into one SAT micro-op (the bias add last, so
    that SAT adds it: wrapping adds commute, so the order does not change the result)."""
    stages, operands, reads = [], [], []

    def shifted(v, amount, name):
        """v >> amount (an immediate, or a per-channel operand vector)."""
        if amount == VEC:
            vec = te.placeholder(vec_shape, "int32", name)
            reads.append(vec)
            return lambda *i: v(*i) >> vec(*vec_index(i))
        return _shifted_by(v, amount)

    aligned = None
    if ep.residual and not ep.residual_gemm:
        res = te.placeholder(shape, "int32", "residual")
        cur, first = res, None
        for k, amount in enumerate(ep.residual_shifts):
            fn = shifted(cur, amount, f"rshift{k}")
            cur = te.compute(shape, fn, f"rshift{k}_step")
            for vec in reads:
                operands.append((vec, cur))
            reads.clear()
            stages.append(cur)
            first = first or cur
        aligned = cur
    value = acc
    if aligned is not None:
        prev_a = value
        value = lambda *i: prev_a(*i) + aligned(*i)
    if ep.bias:
        b = te.placeholder(vec_shape, "int32", "bias")
        reads.append(b)
        prev_b = value
        value = lambda *i: prev_b(*i) + b(*vec_index(i))
    for k, amount in enumerate(ep.shifts):
        value = shifted(value, amount, f"shift{k}")
    lo, hi = ep.lo, ep.hi
    for bound in (lo, hi):
        if bound is not None and not imm_range()[0] <= bound <= imm_range()[1]:
            raise LoweringError(f"clip bound must be in {imm_range()[0]}..{imm_range()[1]} (the "
                                f"ALU's signed immediate), not {bound}")

    def requant(*i):
        v = value(*i)
        v = te.min(v, hi) if hi is not None else v
        return te.max(v, lo) if lo is not None else v
    last = te.compute(shape, requant, "requant")
    stages.append(last)
    if ep.residual and not ep.residual_gemm:
        operands.append((res, first or last))
    operands += [(vec, last) for vec in reads]
    out = te.compute(shape, lambda *i: last(*i).astype("int8"), "out")
    return stages, operands, out


def _residual_gemm(shape, stages, operands):
    """The int8 residual (inp) times the identity weight (wgt), one GEMM micro-op per
    entry."""
    res = te.placeholder(shape, "int8", "residual")
    eye = te.placeholder((1, 1, shape[-1], shape[-1]), "int8", "residual_eye")
    ko, k = te.reduce_axis(1, "rko"), te.reduce_axis(shape[-1], "rk")
    cur = te.compute(shape, lambda *i: te.sum(
        res[i[:-1] + (k,)].astype("int32") * eye[0, ko, i[-1], k].astype("int32"),
        axis=[ko, k]), "residual_gemm")
    stages.append(cur)
    operands += [(res, cur, "inp"), (eye, cur, "wgt")]
    return cur


def fused_conv2d(cfg: Config, sh: Conv2dShape, ep: Epilogue, kn: Conv2dKnobs):
    """(schedule, [data, kernel, *operands, out]) of a packed conv2d with epilogue `ep`."""
    B, BI, BO = cfg.batch, cfg.block_in, cfg.block_out
    nb, cb, cob = sh.batch // B, sh.channels // BI, sh.filters // BO
    oh, ow = sh.out_hw
    H, W, K, S = sh.height, sh.width, sh.kernel, sh.stride
    data = te.placeholder((nb, cb, H, W, B, BI), "int8", "data")
    kernel = te.placeholder((cob, cb, K, K, BO, BI), "int8", "kernel")
    padded, row = input_stage(data, sh)
    ci, kh, kw, cii = (te.reduce_axis(cb, "ci"), te.reduce_axis(K, "kh"),
                       te.reduce_axis(K, "kw"), te.reduce_axis(BI, "cii"))
    shape = (nb, cob, oh, ow, B, BO)
    first, before = [], []
    start = residual_start(ep, shape, first, before)
    acc = te.compute(shape, lambda *i: te.sum(
        padded[i[0], ci, row(i[2], kh), i[3] * S + kw, i[4], cii].astype("int32")
        * kernel[i[1], ci, kh, kw, i[5], cii].astype("int32"), axis=[ci, kh, kw, cii],
        init=None if start is None else start(*i)), "conv")
    stages, operands, out = _declare_epilogue(acc, shape, ep, (cob, B, BO),
                                              lambda i: (i[1], i[4], i[5]))
    stages, operands = first + stages, before + operands
    s = schedule_conv2d(cfg, sh, data, padded, kernel, acc, stages, operands, out, kn)
    return s, [data, kernel] + [op[0] for op in operands] + [out]


def fused_dense(cfg: Config, m: int, k: int, n: int, ep: Epilogue, kn: DenseKnobs):
    """(schedule, [data, weight, *operands, out]) of a packed dense with epilogue `ep`."""
    B, BI, BO = cfg.batch, cfg.block_in, cfg.block_out
    mb, kb, nb = m // B, k // BI, n // BO
    data = te.placeholder((mb, kb, B, BI), "int8", "data")
    weight = te.placeholder((nb, kb, BO, BI), "int8", "weight")
    ko, ki = te.reduce_axis(kb, "ko"), te.reduce_axis(BI, "ki")
    shape = (mb, nb, B, BO)
    first, before = [], []
    start = residual_start(ep, shape, first, before)
    acc = te.compute(shape, lambda *i: te.sum(
        data[i[0], ko, i[2], ki].astype("int32") * weight[i[1], ko, i[3], ki].astype("int32"),
        axis=[ko, ki], init=None if start is None else start(*i)), "gemm")
    stages, operands, out = _declare_epilogue(acc, shape, ep, (nb, B, BO),
                                              lambda i: (i[1], i[2], i[3]))
    stages, operands = first + stages, before + operands
    s = schedule_dense(cfg, data, weight, acc, stages, operands, out, kn, (mb, kb, nb))
    return s, [data, weight] + [op[0] for op in operands] + [out]


def fused_batch_dense(cfg: Config, g: int, m: int, k: int, n: int, ep: Epilogue,
                      kn: DenseKnobs):
    """(schedule, [data, weight, *operands, out]) of `g` packed denses with epilogue `ep`,
    one per leading index: data (g, M', K', B, BI), weight (g, N', K', BO, BI) loaded from
    DRAM like an activation (both operands computed), out (g, M', N', B, BO)."""
    B, BI, BO = cfg.batch, cfg.block_in, cfg.block_out
    mb, kb, nb = m // B, k // BI, n // BO
    data = te.placeholder((g, mb, kb, B, BI), "int8", "data")
    weight = te.placeholder((g, nb, kb, BO, BI), "int8", "weight")
    ko, ki = te.reduce_axis(kb, "ko"), te.reduce_axis(BI, "ki")
    shape = (g, mb, nb, B, BO)
    first, before = [], []
    start = residual_start(ep, shape, first, before)
    acc = te.compute(shape, lambda *i: te.sum(
        data[i[0], i[1], ko, i[3], ki].astype("int32")
        * weight[i[0], i[2], ko, i[4], ki].astype("int32"),
        axis=[ko, ki], init=None if start is None else start(*i)), "gemm")
    stages, operands, out = _declare_epilogue(acc, shape, ep, (nb, B, BO),
                                              lambda i: (i[2], i[3], i[4]))
    stages, operands = first + stages, before + operands
    s = schedule_dense(cfg, data, weight, acc, stages, operands, out, kn, (mb, kb, nb))
    return s, [data, weight] + [op[0] for op in operands] + [out]
