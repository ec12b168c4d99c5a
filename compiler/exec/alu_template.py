"""The accelerator template of `accel_alu` (opdefs/alu.py): int8 elementwise on the ALU.

Every operand is packed, so a tensor is a run of entries (E, batch, block) and an
elementwise op is one loop over them. Per tile of entries:

    load j   acc_j = source_i x (scale_j * identity)   one GEMM micro-op per entry: loads the
                                                       int8 tile from the inp buffer into the
                                                       accumulator, aligned (scale = +-2**k)
    combine  n = acc_0 op acc_1                        ADD / MAX / MIN / MUL
    round    m = -n, from the loads negated            round half to even of n / 2**s is
             t = n >> s                                (n + 2**(s-1) - 1 + (t & 1)) >> s;
             v = ((m + 2**(s+1) - 1) >> (s+1)) << 1    t & 1 = t + v (v = -2 floor(t / 2)),
             y = (n + (t + v) + 2**(s-1) - 1) >> s     shifts and adds only (MUL may be
                                                       narrower than the accumulator)
    clip     y = clip(y, lo, hi), narrowed to int8     (the matcher folds it into SAT)

The identity loads need block_in == block_out. The same numbers as the node's int8 kernel.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from vtalab.spec import Config
from vtalab.spec.isa import imm_range, shift_range

from .. import te
from ..errors import CompileError
from ..topi.common import divisors, place_acc_stages

COMBINE = {"add": lambda a, b: a + b, "max": te.max, "min": te.min, "mul": lambda a, b: a * b}
NEGATED = {"add": "add", "max": "min", "min": "max", "mul": "mul", "": ""}
MAX_SCALE_BITS = 6          # +-2**6 fits an int8 identity weight
ROUND_ACC_TILES = 3         # the rounding stages' tiles besides the negated loads


@dataclass(frozen=True)
class AluSpec:
    sources: int
    loads: tuple              # ((source, scale), ...)
    combine: str
    shift: int
    lo: int
    hi: int

    def negated(self) -> "AluSpec":
        """The spec of -n: -(a + b) = -a + -b, -max(a, b) = min(-a, -b), -(a b) = (-a) b."""
        first = len(self.loads) if self.combine != "mul" else 1
        loads = tuple((i, -s if j < first else s) for j, (i, s) in enumerate(self.loads))
        return AluSpec(self.sources, loads, NEGATED[self.combine], 0, self.lo, self.hi)

    @property
    def rounding(self) -> bool:
        return self.shift > 0

    def all_loads(self) -> tuple:
        """The loads of n, then those of -n where the result is rounded."""
        return self.loads + (self.negated().loads if self.rounding else ())

    @classmethod
    def of(cls, node, sources: int) -> "AluSpec":
        return cls(sources, tuple((int(i), int(s)) for i, s in node.attr("loads")),
                   node.attr("combine", ""), int(node.attr("shift", 0)),
                   int(node.attr("lo", -128)), int(node.attr("hi", 127)))


def check_spec(cfg: Config, spec: AluSpec) -> None:
    """CompileError unless the ALU runs `spec` (identity loads, shift field, immediates)."""
    if cfg.block_in != cfg.block_out:
        raise CompileError(f"block_in must equal block_out for the ALU's identity loads, not "
                           f"{cfg.block_in} and {cfg.block_out}")
    if spec.combine == "mul" and cfg.mul_bits < 8:
        raise CompileError(f"the ALU's MUL operands (mul_bits {cfg.mul_bits}) must hold int8 "
                           f"values")
    for _, scale in spec.loads:
        if abs(scale) > 1 << MAX_SCALE_BITS or abs(scale) & (abs(scale) - 1):
            raise CompileError(f"load scale must be +-2**k with k <= {MAX_SCALE_BITS} (an int8 "
                               f"identity weight), not {scale}")
    low, high = shift_range(cfg)
    top = min(high - 1, imm_range()[1].bit_length() - 1)
    if not low <= spec.shift <= top:
        raise CompileError(f"shift must be in {low}..{top} (the ALU's shift field and "
                           f"immediate, one more bit for rounding), not {spec.shift}")
    if not imm_range()[0] <= spec.lo <= spec.hi <= imm_range()[1]:
        raise CompileError(f"clip bounds must be ALU immediates, not {spec.lo}..{spec.hi}")


def _round_shift(n, m, shape, s: int):
    """Stages of round half to even of n / 2**s (s >= 1, m = -n): the result, unclipped."""
    t = te.compute(shape, lambda *i: n(*i) >> s, "round_t")
    v = te.compute(shape, lambda *i: ((m(*i) + ((1 << (s + 1)) - 1)) >> (s + 1)) << 1,
                   "round_v")
    odd = te.compute(shape, lambda *i: t(*i) + v(*i), "round_odd")
    half = (1 << (s - 1)) - 1
    return [t, v, odd], lambda *i: ((n(*i) + odd(*i)) + half) >> s


def _combined(shape, loads, combine: str, name: str):
    """(stages, value) of the loads folded by `combine`."""
    if not combine:
        return [], loads[0]
    fn, a, b = COMBINE[combine], loads[0], loads[1]
    value = te.compute(shape, lambda *i: fn(a(*i), b(*i)), name)
    return [value], value


def _identity_load(shape, src, eye, name):
    """acc = src x eye^T: one GEMM micro-op per entry (eye: scale * identity)."""
    ko, k = te.reduce_axis(1, f"{name}_ko"), te.reduce_axis(shape[-1], f"{name}_k")
    return te.compute(shape, lambda e, x, y: te.sum(
        src[e, x, k].astype("int32") * eye[0, ko, y, k].astype("int32"), axis=[ko, k]), name)


def declare_alu(cfg: Config, entries: int, spec: AluSpec):
    """(sources, eyes, acc stages, operands, out) of `spec` over (entries, batch, block)."""
    B, BI, BO = cfg.batch, cfg.block_in, cfg.block_out
    shape = (entries, B, BO)
    sources = [te.placeholder((entries, B, BI), "int8", f"x{i}") for i in range(spec.sources)]
    eyes, loads, operands = [], [], []
    for j, (i, _) in enumerate(spec.all_loads()):
        eye = te.placeholder((1, 1, BO, BI), "int8", f"eye{j}")
        load = _identity_load(shape, sources[i], eye, f"load{j}")
        eyes.append(eye)
        loads.append(load)
        operands += [(sources[i], load, "inp"), (eye, load, "wgt")]
    count = len(spec.loads)
    stages, n = _combined(shape, loads[:count], spec.combine, "combine")
    stages = loads + stages
    if spec.rounding:
        negated, m = _combined(shape, loads[count:], NEGATED[spec.combine], "negated")
        rounding, value = _round_shift(n, m, shape, spec.shift)
        stages += negated + rounding
    elif spec.shift < 0:
        value = lambda *i: n(*i) << -spec.shift  # noqa: E731
    else:
        value = n
    result = te.compute(shape, lambda *i: te.max(te.min(value(*i), spec.hi), spec.lo), "clip")
    stages.append(result)
    out = te.compute(shape, lambda *i: result(*i).astype("int8"), "out")
    return sources, eyes, stages, operands, out


def schedule_alu(cfg: Config, entries: int, spec: AluSpec, tile: int, vthreads: int):
    """(schedule, [sources..., eyes..., out]) with `tile` entries per tile."""
    sources, eyes, stages, operands, out = declare_alu(cfg, entries, spec)
    s = te.create_schedule(out)
    e, _, _ = s[out].op.axes
    eo, ei = s[out].split(e, tile)
    vt, eo = s[out].split(eo, nparts=vthreads)
    s[out].vthread(vt)
    place_acc_stages(s, out, eo, None, stages, operands, cfg)
    s[out].pragma(ei, "dma_copy")
    return s, sources + eyes + [out]


def tilings(cfg: Config, entries: int, spec: AluSpec) -> list[tuple[int, int]]:
    """(tile, virtual threads) that fit the SRAMs, biggest tiles first."""
    loads = len(spec.all_loads())
    acc_tiles = loads + 2 * bool(spec.combine) + ROUND_ACC_TILES * spec.rounding + 1
    found = []
    for vt in (2, 1):
        for tile in divisors(entries):
            if (entries // tile) % vt or vt * acc_tiles * tile > cfg.depth("acc") or \
                    vt * loads * tile > cfg.depth("inp") or vt * loads > cfg.depth("wgt"):
                continue
            found.append((tile, vt))
    return sorted(found, key=lambda p: (-p[0], -p[1]))


def eye_weights(cfg: Config, spec: AluSpec) -> list[np.ndarray]:
    """The (1, 1, block_out, block_in) int8 weights scale_j * identity of the loads."""
    eye = np.eye(cfg.block_out, cfg.block_in, dtype=np.int64)
    return [(eye * scale).astype(np.int8).reshape(1, 1, cfg.block_out, cfg.block_in)
            for _, scale in spec.all_loads()]
