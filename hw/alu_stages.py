"""The ALU lanes of the exec pipe, spread over stages 4, 5 and 6 for Fmax.

The same function as :class:`vtalab.hw.alu.AluCore` (which stays the one-cycle reference),
cut so that no stage has more than one carry chain or one barrel shifter in series:

    stage 4  operand = imm or src element; per lane, registered:
               v = a, or the sum a + src for SAT without an immediate (what SHR/SAT shift,
                   and what MIN/MAX/default pass)
               w = a + operand for ADD, else the operand (MIN/MAX/MOV)
               cmp = a < operand (MIN) or a > operand (MAX)
               the shift amount (the operand's, or the immediate's for SAT) as a direction
               and a distance; MUL's three half-width products (DSP multipliers)
    stage 5  the shift, MUL's partial products combined, one AND-OR select: registered
    stage 6  SAT's clip to the out range (in front of the accumulate stage's result mux)
"""
from __future__ import annotations

from amaranth.hdl import Module, Mux, Signal, signed, unsigned

from vtalab.spec import Config
from vtalab.spec.isa import AluOp, sat_relu_bit

from .alu import mul_combine, mul_partials, sat_clip
from .gemm import element_view
from .sram import entry_bits


class AluStages:
    """Builds the lanes into ``m``: call :meth:`stage4`, :meth:`stage5`, then
    :meth:`stage6` with each stage's registered micro-op fields (``op`` layout of
    exec_pipe) and the enable of its registers."""

    def __init__(self, m: Module, cfg: Config):
        self.m, self.cfg = m, cfg
        self.bits = cfg.acc_bits
        self.lanes = entry_bits(cfg, "acc") // cfg.acc_bits      # accumulator elements

    def stage4(self, op, dst_row, src_row, enable) -> None:
        m, cfg, bits = self.m, self.cfg, self.bits
        dst, src = element_view(cfg, "acc", dst_row), element_view(cfg, "acc", src_row)
        opcode = op.alu_opcode
        is_sat, is_min = opcode == AluOp.SAT, opcode == AluOp.MIN
        self.regs = []
        for k in range(self.lanes):
            a = dst[k]
            operand = Signal(signed(bits), name=f"alu_operand_{k}")
            total = Signal(signed(bits), name=f"alu_sum_{k}")
            m.d.comb += [operand.eq(Mux(op.use_imm, op.imm, src[k])),
                         total.eq((a + operand)[:bits])]
            amount = Signal(signed(cfg.shift_bits), name=f"alu_amount_{k}")
            m.d.comb += amount.eq(Mux(is_sat, op.imm, operand)[:cfg.shift_bits])
            r = {
                "v": Signal(signed(bits), name=f"alu5_v_{k}", reset_less=True),
                "w": Signal(signed(bits), name=f"alu5_w_{k}", reset_less=True),
                "cmp": Signal(name=f"alu5_cmp_{k}", reset_less=True),
                "left": Signal(name=f"alu5_left_{k}", reset_less=True),
                "dist": Signal(unsigned(cfg.shift_bits), name=f"alu5_dist_{k}",
                               reset_less=True),
            }
            with m.If(enable):
                m.d.sync += [
                    r["v"].eq(Mux(is_sat & ~op.use_imm, total, a)),
                    r["w"].eq(Mux(opcode == AluOp.ADD, total, operand)),
                    r["cmp"].eq(Mux(is_min, a < operand, a > operand)),
                    r["left"].eq(amount < 0),
                    r["dist"].eq(Mux(amount < 0, -amount, amount)),
                ]
            r["mul"] = []
            for n, prod in enumerate(mul_partials(bits, a, operand)):
                reg = Signal(len(prod), name=f"alu5_mul_{k}_{n}", reset_less=True)
                with m.If(enable & (opcode == AluOp.MUL)):
                    m.d.sync += reg.eq(prod)
                r["mul"].append(reg)
            self.regs.append(r)

    def stage5(self, op, enable) -> Signal:
        """The selected lane results, registered (``alu6``)."""
        m, cfg, bits = self.m, self.cfg, self.bits
        opcode = op.alu_opcode
        minmax = (opcode == AluOp.MIN) | (opcode == AluOp.MAX)
        shifts = (opcode == AluOp.SHR) | (opcode == AluOp.SAT)
        takes_w = (opcode == AluOp.ADD) | (opcode == AluOp.MOV)
        passes_v = ~(minmax | shifts | takes_w | (opcode == AluOp.MUL))
        row = Signal(entry_bits(cfg, "acc"), reset_less=True, name="alu6")
        out = element_view(cfg, "acc", row)
        for k, r in enumerate(self.regs):
            v, w = r["v"], r["w"]
            shifted = Mux(r["left"], (v << r["dist"])[:bits], v >> r["dist"])
            terms = [Mux(passes_v | (minmax & r["cmp"]), v, 0),
                     Mux(takes_w | (minmax & ~r["cmp"]), w, 0),
                     Mux(shifts, shifted, 0),
                     Mux(opcode == AluOp.MUL, mul_combine(bits, *r["mul"]), 0)]
            lane = Signal(signed(bits), name=f"alu_lane_{k}")
            m.d.comb += lane.eq(terms[0] | terms[1] | terms[2] | terms[3])
            with m.If(enable):
                m.d.sync += out[k].eq(lane)
        return row

    def stage6(self, op, row) -> Signal:
        """The final lane results: SAT clipped, the rest as they are (combinational)."""
        m, cfg = self.m, self.cfg
        final = Signal(entry_bits(cfg, "acc"), name="alu_final")
        lanes, out = element_view(cfg, "acc", row), element_view(cfg, "acc", final)
        relu = op.imm[sat_relu_bit(cfg)]
        clip = op.alu_opcode == AluOp.SAT
        m.d.comb += [out[k].eq(Mux(clip, sat_clip(cfg, lanes[k], relu), lanes[k]))
                     for k in range(self.lanes)]
        return final
