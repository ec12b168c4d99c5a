"""Analytic cycle model of a packed conv2d on the accelerator, for ranking knobs.

The model follows what RTL timelines show for the lowering (compiler/vta):

- compute runs, in order, per output tile and thread: an acc reset (one micro-op per acc
  entry), one GEMM per reduction step (one micro-op per cycle), the ALU epilogue (one
  micro-op per acc entry and op) and the acc-operand loads (bias, shift vectors, residual)
  that the compute module itself fetches over the shared read channel;
- the load module fetches inp/wgt tiles at ``bus_bytes`` per cycle (an entry smaller than
  a beat still costs a beat); with one thread a step's loads and GEMM serialise, with two
  or more the loads of step k+1 of one thread run under the GEMM of the other, so a step
  pair costs ``vthreads * max(gemm, load)``;
- the first load is not hidden (pipeline fill) and the last tile's store is not hidden.

It ranks candidates; `conv2d_tune` measures the best few on the RTL.
"""
from __future__ import annotations

from dataclasses import dataclass

from vtalab.spec import Config
from vtalab.spec import timing
from vtalab.spec.isa import AluOp

from ..topi import Conv2dKnobs, Conv2dShape
from ..topi.conv2d import inp_rows

# The hardware's latencies plus the model's fitted offsets, from spec/timing.py (the same
# for every preset): never numbers copied from hw/.
INSN = timing.INSN_CYCLES                # per extra compute instruction
DRAIN = timing.DRAIN_CYCLES              # per GEMM that pushes a token: the exec pipe's drain
LOAD_SETUP = timing.LOAD_SETUP_CYCLES    # per LOAD instruction (the read path's registers and
                                         # the DRAM's latency; not overlapped)


@dataclass(frozen=True)
class EpilogueCost:
    """What the epilogue adds per thread tile: ALU passes and acc operands."""
    alu_ops: int = 1          # SAT: bias add, shift and clip in one micro-op
    vectors: int = 1          # per-channel acc operands (bias, shift vectors)
    residual: bool = False    # an int32 tile the size of the output, loaded into acc
    residual_gemm: bool = False  # ... or int8 in inp times an identity weight (one GEMM):
                                 # the output's start, no tile of its own


def _beats(cfg: Config, buffer: str, entries: int) -> int:
    return entries * _beats_per_entry(cfg, buffer)


_PER_ENTRY: dict = {}     # (id(cfg), buffer) -> (cfg, bus beats per entry)


def _beats_per_entry(cfg: Config, buffer: str) -> int:
    hit = _PER_ENTRY.get((id(cfg), buffer))
    if hit is None or hit[0] is not cfg:       # holding cfg keeps its id from being reused
        hit = (cfg, max(1, -(-cfg.entry_bytes(buffer) // cfg.bus_bytes)))
        if len(_PER_ENTRY) > 256:
            _PER_ENTRY.clear()
        _PER_ENTRY[(id(cfg), buffer)] = hit
    return hit[1]


def residual_tile(ep: EpilogueCost) -> bool:
    """Whether the residual takes an acc tile of its own (not the output's start)."""
    return ep.residual and not ep.residual_gemm


def fits(cfg: Config, sh: Conv2dShape, kn: Conv2dKnobs, ep: EpilogueCost) -> bool:
    """Whether the tiles (one copy per thread) fit the inp, wgt and acc buffers."""
    oh, ow = sh.out_hw
    tw = kn.tile_w or ow
    rows, cols = inp_rows(sh, kn.tile_h), (tw - 1) * sh.stride + sh.kernel
    vt = kn.vthreads
    acc = vt * kn.tile_co * (kn.tile_h * tw * (1 + residual_tile(ep)) + 1) \
        + sh.filters // cfg.block_out * ep.vectors          # vectors: whole, loaded once
    res_inp = kn.tile_co * kn.tile_h * tw if ep.residual_gemm else 0
    return (vt * (kn.tile_ci * rows * cols + res_inp) <= cfg.depth("inp")
            and vt * (kn.tile_co * kn.tile_ci * sh.kernel ** 2 + ep.residual_gemm)
            <= cfg.depth("wgt")
            and acc <= cfg.depth("acc"))


def conv2d_cycles(cfg: Config, sh: Conv2dShape, kn: Conv2dKnobs,
                  ep: EpilogueCost = EpilogueCost()) -> int:
    """Predicted RTL cycles of the conv2d with these knobs."""
    oh, ow = sh.out_hw
    cob, cb = sh.filters // cfg.block_out, sh.channels // cfg.block_in
    tw, vt, K, S = kn.tile_w or ow, kn.vthreads, sh.kernel, sh.stride
    rows, cols = inp_rows(sh, kn.tile_h), (tw - 1) * S + K
    tiles = (cob // kn.tile_co) * (oh // kn.tile_h) * (ow // tw) // vt   # thread groups
    steps = cb // kn.tile_ci
    out_entries = kn.tile_h * tw * kn.tile_co
    load = (_beats(cfg, "inp", kn.tile_ci * rows * cols) + kn.tile_ci * LOAD_SETUP
            + _beats(cfg, "wgt", kn.tile_co * kn.tile_ci * K * K) + LOAD_SETUP)
    gemm = kn.tile_co * kn.tile_ci * K * K * kn.tile_h * tw + INSN + DRAIN
    step = vt * max(gemm, load) if vt > 1 else gemm + load
    # the start (a reset pass, or the residual's GEMM_OVERWRITE pass), the ALU passes, an
    # int32 residual's load; per-channel vectors load once (topi place_acc_stages)
    alu_pass = out_entries * timing.micro_op_cycles(cfg, AluOp.SAT) + INSN
    extra = (out_entries + INSN) + ep.alu_ops * alu_pass \
        + (_beats(cfg, "acc", out_entries) + LOAD_SETUP) * residual_tile(ep)
    vectors = _beats(cfg, "acc", cob * ep.vectors) + LOAD_SETUP * ep.vectors
    per_tile = steps * step + vt * extra
    fill = load if vt > 1 else 0
    store = _beats(cfg, "out", out_entries) + LOAD_SETUP
    return int(tiles * per_tile + fill + store + vectors)


def conv2d_candidates(cfg: Config, sh: Conv2dShape, vthreads: int,
                      ep: EpilogueCost = EpilogueCost(), axes=("co", "h")) -> list:
    """Every legal knob set with ``vthreads`` threads that fits the SRAMs, best predicted
    first (ties broken by the knobs themselves, so the order is deterministic)."""
    return [kn for _, kn in conv2d_ranked(cfg, sh, vthreads, ep, axes)]


def conv2d_ranked(cfg: Config, sh: Conv2dShape, vthreads: int,
                  ep: EpilogueCost = EpilogueCost(), axes=("co", "h")) -> list:
    """``conv2d_candidates`` as (predicted cycles, knobs) pairs, in the same order."""
    from ..topi.common import divisors
    oh, ow = sh.out_hw
    cob, cb = sh.filters // cfg.block_out, sh.channels // cfg.block_in
    found = []
    for axis in axes if vthreads > 1 else ("co",):
        for th in divisors(oh):
            for tw in divisors(ow):
                for tco in divisors(cob):
                    split = cob // tco if axis == "co" else oh // th
                    if split % vthreads:
                        continue
                    for tci in divisors(cb):
                        kn = Conv2dKnobs(th, 0 if tw == ow else tw, tco, tci, vthreads, axis)
                        if fits(cfg, sh, kn, ep):
                            found.append((conv2d_cycles(cfg, sh, kn, ep), _key(kn), kn))
    found.sort(key=lambda item: (item[0], item[1]))
    return [(cycles, kn) for cycles, _, kn in found]


def _key(kn: Conv2dKnobs) -> tuple:
    return (kn.vthread_axis, -kn.tile_h, -kn.tile_w, -kn.tile_co, -kn.tile_ci)
