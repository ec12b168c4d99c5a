"""The ALU lanes of the exec pipe, spread over stages 3 to 6 for Fmax.

The same function as :class:`vtalab.hw.alu.AluCore` (which stays the one-cycle reference),
cut so that no stage has more than one carry chain or one barrel shifter in series:

    stage 3  the immediate's shift (SAT's, or SHR's with use_imm) as a direction and a
             distance, and stage 4's selects, registered (one per micro-op, from its
             fields alone)
    stage 4  operand = imm or src element; per lane, registered:
               v = a, or the sum a + src for SAT without an immediate (what SHR/SAT shift,
                   and what MIN/MAX/default pass)
               w = a + operand for ADD, else the operand (MIN/MAX/MOV)
               cmp = a < operand (MIN) or a > operand (MAX)
               the shift as a direction and a distance (the src element's, or stage 3's);
               MUL's three half-width products (DSP multipliers, registered like the GEMM
               products: hw/ecp5_dsp.py)
    stage 5  the shift and one AND-OR select; MUL's cross products summed; registered
    stage 6  SAT's clip to the out range, or MUL's low product plus the cross sum (the
             exec pipe registers it for its accumulate stage's result mux)
"""
from __future__ import annotations

from amaranth.hdl import Module, Mux, Signal, signed, unsigned

from vtalab.spec import Config
from vtalab.spec.isa import AluOp, sat_relu_bit

from .alu import mul_combine, mul_cross, mul_cross_bits, mul_operand_pairs, sat_clip
from .ecp5_dsp import registered_product
from .gemm import element_view
from .sram import entry_bits


class AluStages:
    """Builds the lanes into ``m``: call :meth:`stage3`, :meth:`stage4`, :meth:`stage5`,
    then :meth:`stage6` with each stage's registered micro-op fields (``op`` layout of
    exec_pipe) and the enable of its registers."""

    def __init__(self, m: Module, cfg: Config, platform=None):
        self.m, self.cfg, self.platform = m, cfg, platform
        self.bits = cfg.acc_bits
        self.lanes = entry_bits(cfg, "acc") // cfg.acc_bits      # accumulator elements

    def stage3(self, op, enable) -> None:
        """The shift taken from the immediate (SAT's, or SHR's with ``use_imm``) as a
        direction and a distance, and stage 4's selects, registered: from the micro-op's
        fields alone, no lane data."""
        m, sb = self.m, self.cfg.shift_bits
        amount = op.imm[:sb].as_signed()
        self.imm_shift = Signal(name="alu4_imm_shift", reset_less=True)
        self.imm_left = Signal(name="alu4_imm_left", reset_less=True)
        self.imm_dist = Signal(unsigned(sb), name="alu4_imm_dist", reset_less=True)
        opcode = op.alu_opcode
        # stage 4's selects, decoded here: flip-flops in front of its 32-bit muxes
        self.v_sum = Signal(name="alu4_v_sum", reset_less=True)
        self.w_sum = Signal(name="alu4_w_sum", reset_less=True)
        self.is_min = Signal(name="alu4_is_min", reset_less=True)
        # the immediate at the lane width, once per micro-op (not once per lane and cycle)
        self.imm = Signal(signed(self.bits), name="alu4_imm", reset_less=True)
        with m.If(enable):
            m.d.sync += self.imm.eq(op.imm)
            m.d.sync += [self.imm_shift.eq((opcode == AluOp.SAT) | op.use_imm),
                         self.imm_left.eq(amount < 0),
                         self.imm_dist.eq(Mux(amount < 0, -amount, amount)),
                         self.v_sum.eq((opcode == AluOp.SAT) & ~op.use_imm),
                         self.w_sum.eq(opcode == AluOp.ADD),
                         self.is_min.eq(opcode == AluOp.MIN)]

    def stage4(self, op, dst_row, src_row, enable) -> None:
        m, cfg, bits = self.m, self.cfg, self.bits
        dst, src = element_view(cfg, "acc", dst_row), element_view(cfg, "acc", src_row)
        opcode = op.alu_opcode
        self.regs = []
        for k in range(self.lanes):
            a = dst[k]
            operand = Signal(signed(bits), name=f"alu_operand_{k}")
            total = Signal(signed(bits), name=f"alu_sum_{k}")
            m.d.comb += [operand.eq(Mux(op.use_imm, self.imm, src[k])),
                         total.eq((a + operand)[:bits])]
            amount = src[k][:cfg.shift_bits].as_signed()        # when not from the imm
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
                    r["v"].eq(Mux(self.v_sum, total, a)),
                    r["w"].eq(Mux(self.w_sum, total, operand)),
                    r["cmp"].eq(Mux(self.is_min, a < operand, a > operand)),
                    r["left"].eq(Mux(self.imm_shift, self.imm_left, amount < 0)),
                    r["dist"].eq(Mux(self.imm_shift, self.imm_dist,
                                     Mux(amount < 0, -amount, amount))),
                ]
            r["mul"] = [registered_product(m, self.platform, x, y,
                                           enable & (opcode == AluOp.MUL),
                                           name=f"alu5_mul_{k}_{n}")
                        for n, (x, y) in enumerate(mul_operand_pairs(bits, a, operand))]
            self.regs.append(r)

    def stage5(self, op, enable) -> Signal:
        """The selected lane results, registered (``alu6``); MUL's are 0 there: its low
        product and cross sum are registered for stage 6."""
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
                     Mux(shifts, shifted, 0)]
            lane = Signal(signed(bits), name=f"alu_lane_{k}")
            m.d.comb += lane.eq(terms[0] | terms[1] | terms[2])
            lo, cross0, cross1 = r["mul"]
            r["lo6"] = Signal(bits, name=f"alu6_mul_lo_{k}", reset_less=True)
            r["cross6"] = Signal(mul_cross_bits(bits), name=f"alu6_mul_cross_{k}",
                                 reset_less=True)
            with m.If(enable):
                m.d.sync += out[k].eq(lane)
            with m.If(enable & (opcode == AluOp.MUL)):
                m.d.sync += [r["lo6"].eq(lo[:bits]),
                             r["cross6"].eq(mul_cross(bits, cross0, cross1))]
        return row

    def stage6(self, op, row) -> Signal:
        """The final lane results: SAT clipped, MUL's product combined, the rest as they
        are (combinational)."""
        m, cfg = self.m, self.cfg
        final = Signal(entry_bits(cfg, "acc"), name="alu_final")
        lanes, out = element_view(cfg, "acc", row), element_view(cfg, "acc", final)
        relu = op.imm[sat_relu_bit(cfg)]
        clip, mul = op.alu_opcode == AluOp.SAT, op.alu_opcode == AluOp.MUL
        for k, r in enumerate(self.regs):
            product = mul_combine(self.bits, r["lo6"], r["cross6"])
            m.d.comb += out[k].eq(Mux(clip, sat_clip(cfg, lanes[k], relu),
                                      Mux(mul, product, lanes[k])))
        return final
