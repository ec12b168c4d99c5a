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
    stage 4  GEMM: the operands copied, one copy per DSP that reads them in the open flow
             (the block RAMs that hold them are a long route from the DSP rows,
             hw/gemm_tree.py); ALU: operands and selects registered (hw/alu_stages.py)
    stage 5  GEMM: the copies registered again (on ECP5 boards the DSPs' input
             registers); ALU: sums, compares and shift distances registered
    stage 6  GEMM: element products registered (DSP multipliers; on ECP5 boards that ask
             for it the register is the MULT18X18D's own, hw/ecp5_dsp.py); ALU: the
             shift's first half, v/w selected, MUL's partial products (DSP multipliers)
    stage 7  GEMM: the products registered again in the fabric (the DSP row is a long
             route from the adders); ALU: the shift's second half ORed in, MUL's cross
             products summed
    stage 8  GEMM: the first adder-tree levels (sums of groups of products) registered;
             ALU: SAT's clip, MUL's final add
    stage 9  GEMM: the rest of the adder trees registered; the acc row read in stage 2 with
             the older in-flight results forwarded into it, registered; ALU: MUL's
             product or the lanes, registered (the accumulate stage's ALU input)
    stage 10 accumulate: forward the newest in-flight result into the acc row, add the
             tree sums (or select the ALU result / zero); result registered
    stage 11 write acc[dst] and out[dst] (low out_bits of every element)

Forwarding and the accumulate stage: hw/forward.py.

Stall (ALU): an ALU micro-op reads both its rows in stage 2 and computes from stage 4, so
it cannot take forwarded values; it waits in stage 2 (holding the loop generator and the
uop read) until no micro-op in stages 3..11 writes its dst row (or src row when it uses
one).
Micro-ops on different rows run one per cycle; an ALU micro-op with fewer ALU lanes (or
MUL multipliers) than elements takes Config.alu_beats (mul_beats) cycles in stage 2 once
its rows are ready (hw/alu_beats.py).
The stall is a register, loaded from an OR of registered hit bits (the comparisons are
made in stage 1c and move with the pipe: hw/pipe_hazard.py), so the hold enables of the
loop generator and the front stages start from a flip-flop and no comparison sits in
front of it.
"""
from __future__ import annotations

from amaranth.hdl import Cat, Const, Module, Signal, signed, unsigned
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from vtalab.spec import Config
from vtalab.spec.isa import ALU_IMM_BITS, ALU_OPCODE_BITS
from vtalab.spec.timing import EXEC_FRONT, WRITE_STAGE

from . import pipe_hazard
from .alu_stages import AluStages
from .gemm import element_view
from .error_latch import LAG_BITS
from .forward import (ACCUMULATE_STAGE, FORWARD_DEPTH, acc_lane_groups, accumulated,
                      any_of, forwarded_rows)
from .gemm_tree import GemmTree
from .index_check import index_check
from .alu_beats import AluBeats
from .registers import register_copies, replicated_register, replicates
from .isa_layout import isa_layouts
from .sram import entry_bits, read_signature, wgt_lane_groups, write_signature
from .verilog import for_simulator

# WRITE_STAGE (the accumulator write) and EXEC_FRONT (the registers in front of stage 2)
# live in spec/timing.py, where the cost models read the pipe's latency from them


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
            "acc_write_next": Out(1),       # acc_write.en of the next cycle
            # acc_write.addr once per accumulator lane (hw/sram.py write_slices)
            "acc_write_addrs": Out(data.ArrayLayout(cfg.addr_bits("acc"),
                                                    cfg.batch * cfg.block_out)),
            "gemm_done": Out(1),            # one micro-op retired, per cycle
            "alu_done": Out(1),
            "uop_read": In(read_signature(32, cfg.depth("uop"))),
            "acc_read_dst": In(read_signature(acc_bits, cfg.depth("acc"))),
            "acc_read_src": In(read_signature(acc_bits, cfg.depth("acc"))),
            # the two read addresses once per accumulator lane (hw/sram.py write_slices)
            **{f"acc_read_{n}_addrs": Out(data.ArrayLayout(cfg.addr_bits("acc"),
                                                           cfg.batch * cfg.block_out))
               for n in ("dst", "src")},
            "acc_write": In(write_signature(acc_bits, cfg.depth("acc"))),
            "inp_read": In(read_signature(entry_bits(cfg, "inp"), cfg.depth("inp"))),
            "wgt_read": In(read_signature(entry_bits(cfg, "wgt"), cfg.depth("wgt"))),
            # the wgt read address once per output lane (hw/sram.py wgt_lane_groups)
            "wgt_read_addrs": Out(data.ArrayLayout(cfg.addr_bits("wgt"), cfg.block_out)),
            "out_write": In(write_signature(entry_bits(cfg, "out"), cfg.depth("out"))),
        })

    def elaborate(self, platform):
        m = Module()
        cfg = self.cfg
        acc_aw = cfg.addr_bits("acc")
        acc_bits = entry_bits(cfg, "acc")
        last = WRITE_STAGE + FORWARD_DEPTH - 2          # oldest history stage (18)
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
        self._lane_addresses(m, platform, idx, moving)
        go2 = valid[2] & ~stall
        ahead = [(stage1d[0], idx["1d"][0]), (valid[2], dst2)] + _hazard_rows(
            m, platform, valid, dst, Cat(go2, dst2))
        hazard = pipe_hazard.next_stall(m, stall, stage1c[1], idx["1c"], ahead, *stage1d)
        beats = AluBeats(m, cfg, stall)
        next_stall = beats.next_stall(hazard, *stage1d, valid[2], op[2])
        m.d.sync += [stall.eq(next_stall), moving.eq(~next_stall)]
        m.d.sync += [valid[3].eq(go2), op[3].eq(op[2]), dst[3].eq(dst2)]
        # stage 3: register the SRAM read data
        tree = GemmTree(m, cfg, platform)
        loads, gemm, alu_en = _datapath_enables(platform, valid, op, beats.train)
        tree.operands(self.inp_read.data, self.wgt_read.data, loads)
        accd4, accs4 = Signal(acc_bits, reset_less=True), Signal(acc_bits, reset_less=True)
        with m.If(loads):
            m.d.sync += [accd4.eq(self.acc_read_dst.data), accs4.eq(self.acc_read_src.data)]
        for s in range(4, last + 1):
            m.d.sync += [valid[s].eq(valid[s - 1]), dst[s].eq(dst[s - 1])]
        for s in range(4, WRITE_STAGE):
            m.d.sync += op[s].eq(op[s - 1])
        # stages 4..9: GEMM products and trees, ALU lanes
        sums = tree.sums(gemm)
        alu = AluStages(m, cfg, platform, beats.beat)
        alu.immediate(op[3], alu_en[3])
        alu.operands(op[4], accd4, accs4, alu_en[4])
        alu.lanes(op[5], alu_en[5])
        alu.select(op[6], alu_en[6])
        alu.shift(op[7], alu_en[7])
        alu.clip(op[8], alu_en[8])
        alu_result = alu.result(alu_en[9])
        # the acc row, with in-flight results forwarded into it (stages 9 and 10)
        results = {s: Signal(acc_bits, name=f"res{s}", reset_less=True)
                   for s in range(WRITE_STAGE, last + 1)}
        groups = acc_lane_groups(cfg, platform)
        rows = forwarded_rows(m, platform, groups, valid, dst, op, gemm, accd4, results)
        # stage 10: accumulate
        result = accumulated(m, platform, groups, op, rows, sums, alu_result, tree.accumulate)
        a = ACCUMULATE_STAGE
        is_alu_w = Signal()
        m.d.sync += [results[WRITE_STAGE].eq(result), is_alu_w.eq(op[a].is_alu)]
        for s in range(WRITE_STAGE + 1, last + 1):
            m.d.sync += results[s].eq(results[s - 1])
        # stage 11: write back
        res_w, dst_w, valid_w = results[WRITE_STAGE], dst[WRITE_STAGE], valid[WRITE_STAGE]
        self._copies(m, platform, self.acc_write_addrs, dst_w, dst[ACCUMULATE_STAGE], "dst_w")
        out = element_view(cfg, "out", self.out_write.data)
        res = element_view(cfg, "acc", res_w)
        m.d.comb += [
            self.acc_write.addr.eq(dst_w), self.acc_write.data.eq(res_w),
            self.acc_write.en.eq(valid_w), self.acc_write_next.eq(valid[ACCUMULATE_STAGE]),
            self.out_write.addr.eq(dst_w), self.out_write.en.eq(valid_w),
            self.gemm_done.eq(valid_w & ~is_alu_w), self.alu_done.eq(valid_w & is_alu_w),
        ]
        m.d.comb += [out[k].eq(res[k][:cfg.out_bits]) for k in range(len(out))]
        # busy: a micro-op in stages 1..11 (the history stages past the write only forward,
        # for micro-ops that are themselves in stages 2..11). A register holding what the
        # OR of those valids will be next cycle: the same value, from a flip-flop.
        entering = [self.valid & ~stall] + front
        m.d.sync += self.busy.eq(any_of(entering + [valid[s] for s in range(2, WRITE_STAGE)]))
        return m

    def _lane_addresses(self, m, platform, idx, moving):
        """The acc and wgt read addresses per lane group: copies of the stage-2 index
        registers (loaded as they are), each beside its slice of the buffer's block
        RAMs."""
        for k, name in enumerate(("dst", "src")):
            self._copies(m, platform, getattr(self, f"acc_read_{name}_addrs"), idx[2][k],
                         idx["1d"][k], f"{name}_idx2", enable=moving)
        self._copies(m, platform, self.wgt_read_addrs, idx[2][2], idx["1d"][2], "wgt_idx2",
                     enable=moving, groups=wgt_lane_groups(self.cfg, platform))

    def _copies(self, m, platform, out, register, loads, name, enable=None, groups=None):
        """``out``, an array of one entry per lane: copies of ``register`` (which loads
        ``loads`` when ``enable``) per lane group (``groups``, by default the
        accumulator's), or ``register`` itself."""
        groups = groups or acc_lane_groups(self.cfg, platform)
        copies = register_copies(m, platform, register, loads, groups, name, enable=enable)
        m.d.comb += [out[j].eq(copies[j % groups]) for j in range(len(out))]

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


def _hazard_rows(m, platform, valid, dst, entering) -> list:
    """(valid, dst row) of stages 3..W-2 for the stall's comparisons (hw/pipe_hazard.py):
    in the open flow a chain of copies of its own (``entering``: what stage 3 loads),
    placed beside the front's comparators (the pipe's own dst registers are pulled towards
    the accumulator lanes across the die), elsewhere the pipe's registers."""
    stages = range(3, WRITE_STAGE - 1)
    if not replicates(platform):
        return [(valid[s], dst[s]) for s in stages]
    rows, row = [], entering
    for s in stages:
        row = replicated_register(m, platform, row, 1, f"hazard_row{s}")[0]
        rows.append((row[0], row[1:]))
    return rows


def _datapath_enables(platform, valid, op, train) -> tuple:
    """The clock enables of the datapath registers of stages 3..9: (the SRAM read data's,
    the GEMM's per stage, the ALU's per stage). From stage 3 on every micro-op moves one
    stage per cycle, so a datapath register's value only matters when its micro-op reaches
    the accumulate stage, and it gets there computed from that micro-op's operands whether
    or not the registers in between loaded for the others. Synthesis therefore loads them
    every cycle (constant enables: no net from a stage's valid to hundreds of flip-flops
    and every DSP's clock enable, the 128-MAC array's slowest nets on the ECP5). Cycle
    simulators load them only for their kind of micro-op (Verilator skips the idle
    datapath), and the ALU's also for the bubbles of an ALU micro-op's beats (``train``,
    hw/alu_beats.py)."""
    stages = range(3, ACCUMULATE_STAGE)
    if not for_simulator(platform):
        return Const(1), {s: Const(1) for s in stages}, {s: Const(1) for s in stages}
    beats = {s: train.get(s, Const(0)) for s in stages}
    return (valid[3] | beats[3], {s: valid[s] & ~op[s].is_alu for s in stages},
            {s: (valid[s] | beats[s]) & op[s].is_alu for s in stages})
