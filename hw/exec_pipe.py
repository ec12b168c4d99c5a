"""The GEMM/ALU execution pipeline: one micro-op per cycle, with forwarding.

    stage 1  uop word read (address from the loop generator)
    stage 1a uop word registered (nothing else on the block RAM's output: on ECP5 boards
             the DP16KD's own output register, fpga/bram_outreg.py)
    stage 1r the word registered again, a relay the placer puts beside the index adders
             (the block RAM's site is a long route away from them)
    stage 1b indices = uop fields + loop offsets, registered
    stage 1c the micro-op's indices compared with those of the ones ahead, hit bits
             registered (hw/pipe_hazard.py)
    stage 1d the stall register computed from those bits
    stage 2  read acc[dst], acc[src], inp[src], wgt[wgt]; an ALU micro-op whose rows are
             still being computed further down stalls here (stages 1d..1 hold too)
    stage 3  SRAM read data registered (nothing else on that data); ALU: the immediate
    stage 4  GEMM: the operands registered again (on ECP5 boards the DSPs' input
             registers: the block RAMs that hold them are a long route from the DSP row);
             ALU: operands and selects registered (see hw/alu_stages.py)
    stage 5  GEMM: element products registered (DSP multipliers; on ECP5 boards that ask
             for it the register is the MULT18X18D's own, hw/ecp5_dsp.py); ALU: sums,
             compares and shift distances registered
    stage 6  GEMM: the products registered again in the fabric (the DSP row is a long
             route from the adders); ALU: shifts, result selected, MUL's partial products
             (DSP multipliers)
    stage 7  GEMM: the first adder-tree levels (sums of groups of products) registered;
             ALU: SAT's clip, MUL's cross products summed
    stage 8  GEMM: the rest of the adder trees registered; the acc row read in stage 2 with
             the older in-flight results forwarded into it, registered; ALU: MUL's final
             add, the result registered
    stage 9  accumulate: forward the newest in-flight result into the acc row, add the
             tree sums (or select the ALU result / zero); result registered
    stage 10 write acc[dst] and out[dst] (low out_bits of every element)

Forwarding (GEMM): the acc row read in stage 2 misses the writes of the eight micro-ops
ahead of it (stages 3..10 at read time). When it reaches stage 9 they sit in the result
register (stage 10) and history registers (stages 11..17); all but the newest were already
results a cycle earlier (stages 10..16), so stage 8 forwards them into the row (an AND-OR
of one-hot selects) and registers it, and stage 9 only chooses between that row and the
result register. The selects are computed a stage early from registered indices, so the
accumulate cycle is result register -> one mux -> adder -> result register, and the adder
trees have two cycles (a grade-6 ECP5 did not fit a 16-product tree in one 10 ns cycle).

Stall (ALU): an ALU micro-op reads both its rows in stage 2 and computes from stage 4, so
it cannot take forwarded values; it waits in stage 2 (holding the loop generator and the
uop read) until no micro-op in stages 3..10 writes its dst row (or src row when it uses
one).
Micro-ops on different rows run one per cycle. The stall is a register, loaded from an OR of
registered hit bits (the comparisons are made in stage 1c and move with the pipe:
hw/pipe_hazard.py), so the hold enables of the loop generator and the front stages start
from a flip-flop and no comparison sits in front of it.
"""
from __future__ import annotations

from amaranth.hdl import Const, Module, Mux, Signal, signed, unsigned
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from vtalab.spec import Config
from vtalab.spec.isa import ALU_IMM_BITS, ALU_OPCODE_BITS
from vtalab.spec.timing import EXEC_FRONT, WRITE_STAGE

from . import pipe_hazard
from .alu_stages import AluStages
from .gemm import element_view
from .error_latch import LAG_BITS
from .gemm_tree import GemmTree
from .index_check import index_check
from .isa_layout import isa_layouts
from .sram import entry_bits, read_signature, write_signature
from .verilog import for_simulator

# WRITE_STAGE (the accumulator write) and EXEC_FRONT (the registers in front of stage 2)
# live in spec/timing.py, where the cost models read the pipe's latency from them
ACCUMULATE_STAGE = WRITE_STAGE - 1
#: micro-ops ahead of a stage-2 read whose writes it does not see (stages 3..10)
FORWARD_DEPTH = WRITE_STAGE - 2


def op_layout() -> data.StructLayout:
    """What a micro-op carries down the pipe besides its indices."""
    return data.StructLayout({
        "is_alu": unsigned(1), "reset": unsigned(1), "overwrite": unsigned(1),
        "alu_opcode": unsigned(ALU_OPCODE_BITS),
        "use_imm": unsigned(1), "imm": signed(ALU_IMM_BITS),
    })


class ExecPipe(wiring.Component):
    """Consumes (uop index, offsets, op) when ``valid`` and not ``stall``; ``busy`` while any
    stage is full. While ``stall`` is high the producer must hold its outputs."""

    def __init__(self, cfg: Config):
        self.cfg = cfg
        lay = isa_layouts(cfg)
        self.uop_layout = lay.uop
        widths = {n: lay.uop[n].shape.width for n in ("dst", "src", "wgt")}
        acc_bits = entry_bits(cfg, "acc")
        super().__init__({
            "valid": In(1),
            "uop_addr": In(cfg.addr_bits("uop")),
            "dst_offset": In(widths["dst"]),
            "src_offset": In(widths["src"]),
            "wgt_offset": In(widths["wgt"]),
            "op": In(op_layout()),
            **{f"{n}_past": In(1) for n in ("dst", "src", "wgt")},  # a loop offset wrapped
            "tag": In(LAG_BITS),            # the micro-op's instruction (hw/error_latch.py)
            "index_error": Out(1),          # an index past its buffer (hw/index_check.py)
            "error_tag": Out(LAG_BITS),
            "stall": Out(1),
            "busy": Out(1),
            "gemm_done": Out(1),            # one micro-op retired, per cycle
            "alu_done": Out(1),
            "uop_read": In(read_signature(32, cfg.depth("uop"))),
            "acc_read_dst": In(read_signature(acc_bits, cfg.depth("acc"))),
            "acc_read_src": In(read_signature(acc_bits, cfg.depth("acc"))),
            "acc_write": In(write_signature(acc_bits, cfg.depth("acc"))),
            "inp_read": In(read_signature(entry_bits(cfg, "inp"), cfg.depth("inp"))),
            "wgt_read": In(read_signature(entry_bits(cfg, "wgt"), cfg.depth("wgt"))),
            "out_write": In(write_signature(entry_bits(cfg, "out"), cfg.depth("out"))),
        })

    def elaborate(self, platform):
        m = Module()
        cfg = self.cfg
        acc_aw = cfg.addr_bits("acc")
        acc_bits = entry_bits(cfg, "acc")
        last = WRITE_STAGE + FORWARD_DEPTH - 2          # oldest history stage (16)
        # per-stage valid / op / dst registers, stages 2..last (index = stage number)
        valid = {s: Signal(name=f"valid{s}") for s in range(2, last + 1)}
        op = {s: Signal(op_layout(), name=f"op{s}", reset_less=True)
              for s in range(2, WRITE_STAGE)}
        dst = {s: Signal(acc_aw, name=f"dst{s}", reset_less=True) for s in range(3, last + 1)}
        stall = self.stall
        # ~stall in a flip-flop of its own: the front stages' clock enables, not inverted
        # (an inverted enable keeps the uop word out of the DP16KD's output register)
        moving = Signal(init=1, name="front_moves")
        front, stage1c, stage1d, idx = self._front(m, valid, op, acc_aw, moving)
        dst2, src2, wgt2 = idx[2]
        # stage 2: data reads from the registered indices
        m.d.comb += [self.acc_read_dst.addr.eq(dst2), self.acc_read_src.addr.eq(src2),
                     self.inp_read.addr.eq(src2), self.wgt_read.addr.eq(wgt2)]
        go2 = valid[2] & ~stall
        ahead = [(stage1d[0], idx["1d"][0]), (valid[2], dst2)] + [
            (valid[s], dst[s]) for s in range(3, WRITE_STAGE - 1)]
        next_stall = pipe_hazard.next_stall(m, stall, stage1c[1], idx["1c"], ahead, *stage1d)
        m.d.sync += [stall.eq(next_stall), moving.eq(~next_stall)]
        m.d.sync += [valid[3].eq(go2), op[3].eq(op[2]), dst[3].eq(dst2)]
        # stage 3: register the SRAM read data
        tree = GemmTree(m, cfg, platform)
        loads, gemm, alu_en = _datapath_enables(platform, valid, op)
        tree.operands(self.inp_read.data, self.wgt_read.data, loads)
        accd4, accs4 = Signal(acc_bits, reset_less=True), Signal(acc_bits, reset_less=True)
        with m.If(loads):
            m.d.sync += [accd4.eq(self.acc_read_dst.data), accs4.eq(self.acc_read_src.data)]
        for s in range(4, last + 1):
            m.d.sync += [valid[s].eq(valid[s - 1]), dst[s].eq(dst[s - 1])]
        for s in range(4, WRITE_STAGE):
            m.d.sync += op[s].eq(op[s - 1])
        # stages 4..8: GEMM products and trees, ALU lanes
        sums = tree.sums(gemm)
        alu = AluStages(m, cfg, platform)
        alu.immediate(op[3], alu_en[3])
        alu.operands(op[4], accd4, accs4, alu_en[4])
        alu.lanes(op[5], alu_en[5])
        alu.select(op[6], alu_en[6])
        alu.clip(op[7], alu_en[7])
        alu_result = Signal(acc_bits, name="alu9", reset_less=True)
        with m.If(alu_en[8]):
            m.d.sync += alu_result.eq(alu.final(op[8]))
        # the acc row, with in-flight results forwarded into it (stages 8 and 9)
        results = {s: Signal(acc_bits, name=f"res{s}", reset_less=True)
                   for s in range(WRITE_STAGE, last + 1)}
        acc_row = self._forwarded_row(m, platform, valid, dst, op, gemm, accd4, results)
        # stage 9: accumulate
        acc = element_view(cfg, "acc", acc_row)
        total = Signal(acc_bits)
        total_view = element_view(cfg, "acc", total)
        for k, s in enumerate(sums):
            m.d.comb += total_view[k].eq(tree.accumulate(acc[k], s))
        a = ACCUMULATE_STAGE
        result = Mux(op[a].is_alu, alu_result, Mux(op[a].reset, 0, total))
        is_alu_w = Signal()
        m.d.sync += [results[WRITE_STAGE].eq(result), is_alu_w.eq(op[a].is_alu)]
        for s in range(WRITE_STAGE + 1, last + 1):
            m.d.sync += results[s].eq(results[s - 1])
        # stage 10: write back
        res_w, dst_w, valid_w = results[WRITE_STAGE], dst[WRITE_STAGE], valid[WRITE_STAGE]
        out = element_view(cfg, "out", self.out_write.data)
        res = element_view(cfg, "acc", res_w)
        m.d.comb += [
            self.acc_write.addr.eq(dst_w), self.acc_write.data.eq(res_w),
            self.acc_write.en.eq(valid_w),
            self.out_write.addr.eq(dst_w), self.out_write.en.eq(valid_w),
            self.gemm_done.eq(valid_w & ~is_alu_w), self.alu_done.eq(valid_w & is_alu_w),
        ]
        m.d.comb += [out[k].eq(res[k][:cfg.out_bits]) for k in range(len(out))]
        # busy: a micro-op in stages 1..10 (the history stages past the write only forward,
        # for micro-ops that are themselves in stages 2..10). A register holding what the
        # OR of those valids will be next cycle: the same value, from a flip-flop.
        entering = [self.valid & ~stall] + front
        m.d.sync += self.busy.eq(_any(entering + [valid[s] for s in range(2, WRITE_STAGE)]))
        return m

    def _front(self, m, valid, op, acc_aw, moving):
        """Stages 1..1d, all held while ``stall``: 1 -> 1a the uop read; 1a -> 1r -> 1b the
        word registered twice; 1b -> 1c indices = uop fields + offsets, registered;
        1c -> 1d -> 2 the micro-op moves on when stage 2 is free next cycle. ``stall``
        (stage 2 holds its micro-op) is a flip-flop computed a cycle ahead, so it reaches
        the loop generator with no logic in front; ``moving``, its complement in a
        flip-flop of its own, is every hold enable here. Returns the valids of stages
        1..1d, (valid, op) of stages 1c and 1d, and the index registers of 1c, 1d and 2."""
        names = ("dst", "src", "wgt")
        offs1 = [Signal.like(getattr(self, f"{n}_offset"), name=f"{n}_off1", reset_less=True)
                 for n in names]
        offs1a, offs1r = ([Signal.like(o, name=f"{n}_off{s}", reset_less=True)
                           for o, n in zip(offs1, names)] for s in ("1a", "1r"))
        valid1, valid1a, valid1r, valid1c, valid1d = (Signal(name=f"valid{s}")
                                                      for s in EXEC_FRONT)
        op1, op1a, op1r, op1c, op1d = (Signal(op_layout(), name=f"op{s}", reset_less=True)
                                       for s in EXEC_FRONT)
        word1a, word1r = (Signal.like(self.uop_read.data, name=f"uop{s}", reset_less=True)
                          for s in ("1a", "1r"))
        m.d.comb += [self.uop_read.addr.eq(self.uop_addr), self.uop_read.en.eq(moving)]
        uop = data.View(self.uop_layout, word1r)
        idx = {s: (Signal(acc_aw, name=f"dst_idx{s}", reset_less=True),
                   Signal(offs1[1].shape(), name=f"src_idx{s}", reset_less=True),
                   Signal(offs1[2].shape(), name=f"wgt_idx{s}", reset_less=True))
               for s in ("1c", "1d", 2)}
        with m.If(moving):
            m.d.sync += [valid1.eq(self.valid), op1.eq(self.op)]
            m.d.sync += [o.eq(getattr(self, f"{n}_offset")) for o, n in zip(offs1, names)]
            m.d.sync += [valid1a.eq(valid1), op1a.eq(op1), word1a.eq(self.uop_read.data)]
            m.d.sync += [a.eq(b) for a, b in zip(offs1a, offs1)]
            m.d.sync += [valid1r.eq(valid1a), op1r.eq(op1a), word1r.eq(word1a)]
            m.d.sync += [a.eq(b) for a, b in zip(offs1r, offs1a)]
            m.d.sync += [valid1c.eq(valid1r), op1c.eq(op1r)]
            m.d.sync += [r.eq(f + o) for r, f, o in
                         zip(idx["1c"], (uop.dst, uop.src, uop.wgt), offs1r)]
            m.d.sync += [valid1d.eq(valid1c), op1d.eq(op1c)]
            m.d.sync += [a.eq(b) for a, b in zip(idx["1d"], idx["1c"])]
            m.d.sync += [valid[2].eq(valid1d), op[2].eq(op1d)]
            m.d.sync += [a.eq(b) for a, b in zip(idx[2], idx["1d"])]
        pasts = [getattr(self, f"{n}_past") for n in names]
        error, tag = index_check(m, self.cfg, moving, pasts, self.tag, uop, offs1r, valid1c,
                                 op1c, idx["1c"])
        m.d.comb += [self.index_error.eq(error), self.error_tag.eq(tag)]
        return ([valid1, valid1a, valid1r, valid1c, valid1d], (valid1c, op1c), (valid1d, op1d),
                idx)

    @staticmethod
    def _forwarded_row(m, platform, valid, dst, op, gemm, accd4, results):
        """The acc row for the micro-op in the accumulate stage A: the newest in-flight
        result with its dst (d stages ahead, d = 1..FORWARD_DEPTH), else the row read in
        stage 2. Results d >= 2 ahead are forwarded in stage A-1 into a register, d = 1
        (being computed in stage A a cycle earlier) in stage A; the selects are registered
        a stage earlier, from comparisons registered a stage before that. An overwriting
        GEMM micro-op gets zero: the register loads 0 and the newest result is not chosen
        (both decided in stage A-1, nothing added to stage A's path)."""
        a = ACCUMULATE_STAGE
        rows = {4: accd4}
        for s in range(5, a):                           # the row read, carried to A-1
            rows[s] = Signal.like(accd4, name=f"acc{s}", reset_less=True)
            with m.If(gemm[s - 1]):
                m.d.sync += rows[s].eq(rows[s - 1])
        # stage A-3: the older results' dst compared (from stage 3 on every micro-op moves
        # one stage per cycle, so the micro-op d ahead is still d ahead a cycle later)
        hits = []
        for d in range(2, FORWARD_DEPTH + 1):
            hits.append(Signal(name=f"fwd{a - 2}_hit_{d}"))
            m.d.sync += hits[-1].eq(valid[a - 3 + d] & (dst[a - 3 + d] == dst[a - 3]))
        # stage A-2: one-hot selects of the older results for A-1 (they sit in A-2+d now)
        sels = []
        for k, d in enumerate(range(2, FORWARD_DEPTH + 1)):
            sels.append((d, Signal(name=f"fwd{a - 1}_{d}")))
            m.d.sync += sels[-1][1].eq(hits[k] & ~_any(hits[:k]))
        none = Signal(name=f"fwd{a - 1}_none")
        m.d.sync += none.eq(~_any(hits))
        # stage A-1: the newest result's select for A; the older ones forwarded
        newest = Signal(name=f"fwd{a}_1")
        m.d.sync += newest.eq(valid[a] & (dst[a] == dst[a - 1]) & ~op[a - 1].overwrite)
        row = _select_one(none, rows[a - 1], [(sel, results[a - 1 + d]) for d, sel in sels],
                          priority=for_simulator(platform))
        rows[a] = Signal.like(accd4, name=f"acc{a}", reset_less=True)
        with m.If(gemm[a - 1]):
            m.d.sync += rows[a].eq(Mux(op[a - 1].overwrite, 0, row))
        # stage A
        return Mux(newest, results[WRITE_STAGE], rows[a])


def _datapath_enables(platform, valid, op) -> tuple:
    """The clock enables of the datapath registers of stages 3..8: (the SRAM read data's,
    the GEMM's per stage, the ALU's per stage). From stage 3 on every micro-op moves one
    stage per cycle, so a datapath register's value only matters when its micro-op reaches
    the accumulate stage, and it gets there computed from that micro-op's operands whether
    or not the registers in between loaded for the others. Synthesis therefore loads them
    every cycle (constant enables: no net from a stage's valid to hundreds of flip-flops
    and every DSP's clock enable, the 128-MAC array's slowest nets on the ECP5). Cycle
    simulators load them only for their kind of micro-op (Verilator skips the idle
    datapath)."""
    stages = range(3, ACCUMULATE_STAGE)
    if not for_simulator(platform):
        return Const(1), {s: Const(1) for s in stages}, {s: Const(1) for s in stages}
    return (valid[3], {s: valid[s] & ~op[s].is_alu for s in stages},
            {s: valid[s] & op[s].is_alu for s in stages})


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


def _any(bits):
    out = Const(0, 1)
    for b in bits:
        out = out | b
    return out
