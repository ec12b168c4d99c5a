"""The GEMM/ALU execution pipeline: one micro-op per cycle, with forwarding.

    stage 1  uop word read (address from the loop generator)
    stage 1b indices = uop fields + loop offsets, registered
    stage 1c the micro-op's hazard against the ones ahead, computed into the stall register
    stage 2  read acc[dst], acc[src], inp[src], wgt[wgt]; an ALU micro-op whose rows are
             still being computed further down stalls here (stages 1c, 1b, 1 hold too)
    stage 3  SRAM read data registered (nothing else in this cycle)
    stage 4  GEMM: element products registered (DSP multipliers; on ECP5 boards that ask
             for it the register is the MULT18X18D's own, hw/ecp5_dsp.py); ALU: operand, sums,
             compares and shift distances registered, MUL as three half-width partial
             products (DSP multipliers); see hw/alu_stages.py
    stage 5  GEMM: adder trees registered; ALU: shifts, MUL combined, result selected
    stage 6  accumulate: forward in-flight results into the acc row, add the tree sums
             (or select the ALU result, SAT clipped, / zero); result registered
    stage 7  write acc[dst] and out[dst] (low out_bits of every element)

Forwarding (GEMM): the acc row read in stage 2 misses the writes of the five micro-ops ahead
of it (stages 3..7 at read time). In stage 6 they sit in the result register (stage 7) and
four history registers (stages 8..11); the newest one with the same index replaces the row.
The select is computed one stage early from registered indices, so the accumulate cycle is
only result register -> mux -> adder -> result register.

Stall (ALU): an ALU micro-op reads both its rows in stage 2 and computes in stage 4, so it
cannot take forwarded values; it waits in stage 2 (holding the loop generator and the uop
read) until no micro-op in stages 3..7 writes its dst row (or src row when it uses one).
Micro-ops on different rows run one per cycle. The stall is a register: the comparisons are
made a cycle ahead (for the micro-op in 1c against stages 2..6, or for a stalled one against
3..6), so the hold enables of the loop generator and the front stages start from a
flip-flop (the Fmax limit on the ECP5 before).
"""
from __future__ import annotations

from amaranth.hdl import Const, Module, Mux, Signal, signed, unsigned
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from vtalab.spec import Config
from vtalab.spec.isa import ALU_IMM_BITS, ALU_OPCODE_BITS

from .alu_stages import AluStages
from .ecp5_dsp import registered_product
from .gemm import element_view, tree_sum
from .isa_layout import isa_layouts
from .sram import entry_bits, read_signature, write_signature

#: stage of the accumulator write (9 cycles after the micro-op leaves the loop generator:
#: stages 1, 1b, 1c, 2..7)
WRITE_STAGE = 7
#: micro-ops ahead of a stage-2 read whose writes it does not see (stages 3..7)
FORWARD_DEPTH = WRITE_STAGE - 2


def op_layout() -> data.StructLayout:
    """What a micro-op carries down the pipe besides its indices."""
    return data.StructLayout({
        "is_alu": unsigned(1), "reset": unsigned(1), "alu_opcode": unsigned(ALU_OPCODE_BITS),
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
        last = WRITE_STAGE + FORWARD_DEPTH - 1          # oldest history stage (11)
        # per-stage valid / op / dst registers, stages 2..last (index = stage number)
        valid = {s: Signal(name=f"valid{s}") for s in range(2, last + 1)}
        op = {s: Signal(op_layout(), name=f"op{s}", reset_less=True)
              for s in range(2, WRITE_STAGE)}
        dst = {s: Signal(acc_aw, name=f"dst{s}", reset_less=True) for s in range(3, last + 1)}
        stall = self.stall
        # stage 1 -> 1b: uop read; stage 1b -> 1c: indices = uop fields + offsets,
        # registered; 1c -> 2: the micro-op moves on when stage 2 is free next cycle.
        # ``stall`` (stage 2 holds its micro-op) is a flip-flop computed a cycle ahead, so
        # it reaches the loop generator and every hold enable with no logic in front.
        offs1 = [Signal.like(getattr(self, f"{n}_offset"), name=f"{n}_off1", reset_less=True)
                 for n in ("dst", "src", "wgt")]
        valid1, op1 = Signal(name="valid1"), Signal(op_layout(), name="op1", reset_less=True)
        m.d.comb += [self.uop_read.addr.eq(self.uop_addr), self.uop_read.en.eq(~stall)]
        uop = data.View(self.uop_layout, self.uop_read.data)
        idx = {s: (Signal(acc_aw, name=f"dst_idx{s}", reset_less=True),
                   Signal(offs1[1].shape(), name=f"src_idx{s}", reset_less=True),
                   Signal(offs1[2].shape(), name=f"wgt_idx{s}", reset_less=True))
               for s in ("1c", 2)}
        valid1c, op1c = Signal(name="valid1c"), Signal(op_layout(), name="op1c", reset_less=True)
        with m.If(~stall):
            m.d.sync += [valid1.eq(self.valid), op1.eq(self.op)]
            m.d.sync += [o.eq(getattr(self, f"{n}_offset"))
                         for o, n in zip(offs1, ("dst", "src", "wgt"))]
            m.d.sync += [valid1c.eq(valid1), op1c.eq(op1)]
            m.d.sync += [r.eq(f + o) for r, f, o in
                         zip(idx["1c"], (uop.dst, uop.src, uop.wgt), offs1)]
            m.d.sync += [valid[2].eq(valid1c), op[2].eq(op1c)]
            m.d.sync += [a.eq(b) for a, b in zip(idx[2], idx["1c"])]
        dst2, src2, wgt2 = idx[2]
        # stage 2: data reads from the registered indices
        m.d.comb += [self.acc_read_dst.addr.eq(dst2), self.acc_read_src.addr.eq(src2),
                     self.inp_read.addr.eq(src2), self.wgt_read.addr.eq(wgt2)]
        go2 = valid[2] & ~stall
        m.d.sync += stall.eq(self._next_stall(valid, op, dst, idx, valid1c, op1c, go2))
        m.d.sync += [valid[3].eq(go2), op[3].eq(op[2]), dst[3].eq(dst2)]
        # stage 3: register the SRAM read data
        inp4 = Signal(entry_bits(cfg, "inp"), reset_less=True)
        wgt4 = Signal(entry_bits(cfg, "wgt"), reset_less=True)
        accd4, accs4 = Signal(acc_bits, reset_less=True), Signal(acc_bits, reset_less=True)
        with m.If(valid[3]):
            m.d.sync += [inp4.eq(self.inp_read.data), wgt4.eq(self.wgt_read.data),
                         accd4.eq(self.acc_read_dst.data), accs4.eq(self.acc_read_src.data)]
        for s in range(4, last + 1):
            m.d.sync += [valid[s].eq(valid[s - 1]), dst[s].eq(dst[s - 1])]
        for s in range(4, WRITE_STAGE):
            m.d.sync += op[s].eq(op[s - 1])
        # stage 4: products (GEMM), lanes (ALU); data registers load only for their kind of
        # micro-op (clock enables: less switching, and Verilator skips the idle datapath)
        gemm4, alu4 = valid[4] & ~op[4].is_alu, valid[4] & op[4].is_alu
        inp = element_view(cfg, "inp", inp4)
        wgt = element_view(cfg, "wgt", wgt4)
        products = {}
        for b in range(cfg.batch):
            for o in range(cfg.block_out):
                for i in range(cfg.block_in):
                    products[b, o, i] = registered_product(
                        m, platform, inp[b * cfg.block_in + i], wgt[o * cfg.block_in + i],
                        gemm4, name=f"prod5_{b}_{o}_{i}")
        # ALU lanes: stages 4..6 (hw/alu_stages.py)
        alu = AluStages(m, cfg)
        alu.stage4(op[4], accd4, accs4, alu4)
        alu6 = alu.stage5(op[5], valid[5] & op[5].is_alu)
        acc5, acc6 = Signal(acc_bits, reset_less=True), Signal(acc_bits, reset_less=True)
        with m.If(gemm4):
            m.d.sync += acc5.eq(accd4)
        with m.If(valid[5] & ~op[5].is_alu):
            m.d.sync += acc6.eq(acc5)
        # stage 5: adder trees; forwarding select for stage 6
        sums = {}
        for b in range(cfg.batch):
            for o in range(cfg.block_out):
                total = tree_sum([products[b, o, i] for i in range(cfg.block_in)])
                t = Signal(signed(len(total)), name=f"sum6_{b}_{o}", reset_less=True)
                with m.If(valid[5] & ~op[5].is_alu):
                    m.d.sync += t.eq(total)
                sums[b, o] = t
        # op in stage 6 is forwarded from the one in stage 6 + d (d = 1..FORWARD_DEPTH);
        # one cycle earlier those are in stages 5 + d
        sel6 = [Signal(name=f"fwd6_{d}") for d in range(1, FORWARD_DEPTH + 1)]
        newer = []
        for d, sel in zip(range(1, FORWARD_DEPTH + 1), sel6):
            hit = valid[5 + d] & (dst[5 + d] == dst[5])
            m.d.sync += sel.eq(hit & ~_any(newer))
            newer.append(hit)
        # stage 6: accumulate
        results = {s: Signal(acc_bits, name=f"res{s}", reset_less=True)
                   for s in range(WRITE_STAGE, last + 1)}
        acc_row = Signal(acc_bits)
        fwd = acc6
        for d in range(FORWARD_DEPTH, 0, -1):           # oldest first, newest outermost
            fwd = Mux(sel6[d - 1], results[6 + d], fwd)
        m.d.comb += acc_row.eq(fwd)
        acc = element_view(cfg, "acc", acc_row)
        gemm = Signal(acc_bits)
        gemm_view = element_view(cfg, "acc", gemm)
        for b in range(cfg.batch):
            for o in range(cfg.block_out):
                total = acc[b * cfg.block_out + o] + sums[b, o]
                m.d.comb += gemm_view[b * cfg.block_out + o].eq(total[:cfg.acc_bits])
        result = Mux(op[6].is_alu, alu.stage6(op[6], alu6), Mux(op[6].reset, 0, gemm))
        is_alu7 = Signal()
        m.d.sync += [results[WRITE_STAGE].eq(result), is_alu7.eq(op[6].is_alu)]
        for s in range(WRITE_STAGE + 1, last + 1):
            m.d.sync += results[s].eq(results[s - 1])
        # stage 7: write back
        res7, dst7, valid7 = results[WRITE_STAGE], dst[WRITE_STAGE], valid[WRITE_STAGE]
        out = element_view(cfg, "out", self.out_write.data)
        res = element_view(cfg, "acc", res7)
        m.d.comb += [
            self.acc_write.addr.eq(dst7), self.acc_write.data.eq(res7),
            self.acc_write.en.eq(valid7),
            self.out_write.addr.eq(dst7), self.out_write.en.eq(valid7),
            self.gemm_done.eq(valid7 & ~is_alu7), self.alu_done.eq(valid7 & is_alu7),
        ]
        m.d.comb += [out[k].eq(res[k][:cfg.out_bits]) for k in range(len(out))]
        # history stages 8.. only forward; a micro-op that needs them is itself in stages 2..7
        front = [valid1, valid1c] + [valid[s] for s in range(2, WRITE_STAGE + 1)]
        m.d.comb += self.busy.eq(_any(front))
        return m


    @staticmethod
    def _next_stall(valid, op, dst, idx, valid1c, op1c, go2):
        """Next cycle's stall: the ALU micro-op in stage 2 then (the one in 1c when stage 2
        moves, else the stalled one) must wait while a micro-op in stages 3..7 then writes
        a row it reads. Those are today's stages 2 (if it issues) .. 6: all registers."""
        def hazard(z_op, z_idx, ahead):
            z_dst, z_src = z_idx[0], z_idx[1][:len(z_idx[0])]
            hits = [v & ((d == z_dst) | (~z_op.use_imm & (d == z_src))) for v, d in ahead]
            return _any(hits)
        older = [(valid[s], dst[s]) for s in range(3, WRITE_STAGE)]
        incoming = valid1c & op1c.is_alu & hazard(op1c, idx["1c"], [(go2, idx[2][0])] + older)
        staying = valid[2] & op[2].is_alu & hazard(op[2], idx[2], older)
        return Mux(go2 | ~valid[2], incoming, staying)


def _any(bits):
    out = Const(0, 1)
    for b in bits:
        out = out | b
    return out
