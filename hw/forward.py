"""The exec pipe's accumulator row with in-flight results forwarded into it, and the
accumulate stage, built per group of accumulator lanes.

Forwarding (GEMM): the acc row read in stage 2 misses the writes of the micro-ops ahead of
it (stages 3..W at read time). When it reaches the accumulate stage A they sit in the
result register (stage W) and history registers; all but the newest were already results
a cycle earlier, so stage A-1 forwards them into the row (an AND-OR of one-hot selects)
and registers it, and stage A only chooses between that row and the result register.
The selects are computed a stage early from registered indices, so the accumulate cycle
is result register -> one mux -> adder -> result register.

Every select (and the accumulate stage's ALU/reset choice) is a flip-flop per lane group:
in the open FPGA flow a group is one accumulator element (its own copy of each select,
placed beside its 32 bits of muxes and adder, instead of one flip-flop driving the whole
row across the die); elsewhere one group, the whole row (Verilator copies whole rows
faster; vendor tools replicate flip-flops themselves).
"""
from __future__ import annotations

from amaranth.hdl import Cat, Const, Module, Mux, Signal

from vtalab.spec import Config
from vtalab.spec.timing import WRITE_STAGE

from .registers import replicated_register, replicates
from .verilog import for_simulator

ACCUMULATE_STAGE = WRITE_STAGE - 1
#: micro-ops ahead of a stage-2 read whose writes it does not see (stages 3..11)
FORWARD_DEPTH = WRITE_STAGE - 2


def acc_lane_groups(cfg: Config, platform=None) -> int:
    """Groups of accumulator lanes with their own control flip-flops (and, in the compute
    module, their own accumulator block RAMs: hw/sram.py ``write_slices``): one per
    accumulator element on platforms that ask for it (``vtalab_lane_groups``: the open
    FPGA flow, whose placer does not replicate flip-flops; hw/verilog.OpenFlowPlatform),
    else one (cycle simulators, the vendor flows: their tools replicate by themselves,
    and slicing would cost them block RAMs)."""
    return cfg.batch * cfg.block_out if replicates(platform) else 1


def forwarded_rows(m: Module, platform, groups: int, valid, dst, op, gemm, accd4,
                   results) -> list:
    """The acc row for the micro-op in stage A, one part per lane group: the newest
    in-flight result with its dst (d stages ahead, d = 1..FORWARD_DEPTH), else the row read
    in stage 2. Results d >= 2 ahead are forwarded in stage A-1 into a register, d = 1
    (being computed in stage A a cycle earlier) in stage A; the selects are registered a
    stage earlier, from comparisons registered two stages before that. An overwriting GEMM
    micro-op gets zero: the register loads 0 and the newest result is not chosen (both
    decided in stage A-1, nothing added to stage A's path)."""
    a = ACCUMULATE_STAGE
    rows = {4: accd4}
    for s in range(5, a):                           # the row read, carried to A-1
        rows[s] = Signal.like(accd4, name=f"acc{s}", reset_less=True)
        with m.If(gemm[s - 1]):
            m.d.sync += rows[s].eq(rows[s - 1])
    # stage A-4: the older results' dst compared (from stage 3 on every micro-op moves
    # one stage per cycle, so the micro-op d ahead is still d ahead a cycle later), each
    # match registered once; stage A-3: copied per lane group (the selects' inputs sit
    # beside their group; the copies load a flip-flop, not the compare's LUTs)
    def copies(value, name, count=groups):
        return replicated_register(m, platform, value, count, name)
    hits = []
    for d in range(2, FORWARD_DEPTH + 1):
        match = Signal(name=f"fwd{a - 3}_match_{d}")
        m.d.sync += match.eq(valid[a - 4 + d] & (dst[a - 4 + d] == dst[a - 4]))
        hits.append(copies(match, f"fwd{a - 2}_hit_{d}"))
    # stage A-2: one-hot selects of the older results for A-1 (they sit in A-2+d now)
    sels, none = [[] for _ in hits], []
    for g in range(groups):
        group_hits = [hit[g] for hit in hits]
        for k, d in enumerate(range(2, FORWARD_DEPTH + 1)):
            sels[k] += copies(group_hits[k] & ~any_of(group_hits[:k]), f"fwd{a - 1}_{d}_{g}", 1)
        none += copies(~any_of(group_hits), f"fwd{a - 1}_none_{g}", 1)
    sels = list(zip(range(2, FORWARD_DEPTH + 1), sels))
    overwrite = copies(op[a - 2].overwrite, f"overwrite{a - 1}")    # op[A-1]'s
    # stage A-1: the newest result's select for A; the older ones forwarded. Its match
    # is registered once a stage earlier (A-1 and A-2 move on every cycle, so that pair is
    # next cycle's A and A-1): the copies load one flip-flop, not the dst compare's LUTs
    newest_match = Signal(name=f"fwd{a - 1}_newest")
    m.d.sync += newest_match.eq(valid[a - 1] & (dst[a - 1] == dst[a - 2])
                                & ~op[a - 2].overwrite)
    newest = copies(newest_match, f"fwd{a}_1")
    parts = []
    for g in range(groups):
        def lane(value):
            return _part(value, g, groups)
        row = _select_one(none[g], lane(rows[a - 1]),
                          [(sel[g], lane(results[a - 1 + d])) for d, sel in sels],
                          priority=for_simulator(platform))
        held = Signal(len(accd4) // groups, name=f"acc{a}_{g}", reset_less=True)
        with m.If(gemm[a - 1]):
            m.d.sync += held.eq(Mux(overwrite[g], 0, row))
        parts.append(Mux(newest[g], lane(results[WRITE_STAGE]), held))
    return parts


def accumulated(m: Module, platform, groups: int, op, rows: list, sums: list, alu_result,
                accumulate):
    """Stage A's result: per lane group the ALU's result, zero (a reset GEMM) or the
    forwarded row plus the tree sums (``accumulate(acc_element, sum)``)."""
    a = ACCUMULATE_STAGE
    is_alu = replicated_register(m, platform, op[a - 1].is_alu, groups, f"alu{a}_sel")
    reset = replicated_register(m, platform, op[a - 1].reset, groups, f"reset{a}_sel")
    per_group = len(sums) // groups
    parts = []
    for g, row in enumerate(rows):
        bits = len(row) // per_group
        total = Cat(*(accumulate(row[k * bits:(k + 1) * bits], sums[g * per_group + k])
                      for k in range(per_group)))
        parts.append(Mux(is_alu[g], _part(alu_result, g, groups), Mux(reset[g], 0, total)))
    return Cat(*parts)


def _part(value, group: int, groups: int):
    bits = len(value) // groups
    return value[group * bits:(group + 1) * bits]


def _select_one(first_sel, first, others, priority: bool):
    """The value whose select is high; the selects are one-hot or all low (then 0). As an
    AND-OR for synthesis (no priority chain on the FPGA's critical path); as a priority
    chain for simulators (the same value: Verilator then copies one row instead of
    masking and ORing every candidate)."""
    if priority:
        row = 0
        for sel, value in reversed(others):
            row = Mux(sel, value, row)
        return Mux(first_sel, first, row)
    row = Mux(first_sel, first, 0)
    for sel, value in others:
        row = row | Mux(sel, value, 0)
    return row


def any_of(bits):
    out = Const(0, 1)
    for b in bits:
        out = out | b
    return out
