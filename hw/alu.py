"""The ALU datapath: one accumulator row per cycle, every lane in parallel (combinational).

Per element, with ``operand`` the sign-extended 16-bit immediate or the element of the
second accumulator row: MIN/MAX signed, ADD wrapping, SHR by the operand's low
log2(acc_bits) bits read as a signed number (negative shifts left), MUL wrapping (of the
operands' low ``Config.mul_bits`` bits read as signed), MOV the operand. SAT (requantise) adds the src element unless ``use_imm``, shifts by the
immediate's low log2(acc_bits) bits like SHR, and clips to the signed out_bits range
(lower bound 0 when the immediate's next bit, relu, is set).
"""
from __future__ import annotations

from amaranth.hdl import Module, Mux, Signal, signed
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from vtalab.spec import Config
from vtalab.spec.isa import ALU_IMM_BITS, ALU_OPCODE_BITS, AluOp, sat_relu_bit

from .ecp5_dsp import DSP_OPERAND_BITS
from .gemm import element_view
from .sram import entry_bits


class AluCore(wiring.Component):
    """``result = op(dst_row, src_row or imm)`` lane by lane.

    With ``mul=False`` the MUL opcode is left out (its result is ``dst``): a pipelined user
    computes it itself, e.g. with :func:`mul_operand_pairs`, :func:`mul_cross` and
    :func:`mul_combine`. With ``sat_clip=False`` SAT stops before the clip (its result is
    the shifted sum): a pipelined user clips in the next stage with :func:`sat_clip`."""

    def __init__(self, cfg: Config, mul: bool = True, sat_clip: bool = True):
        self.cfg, self.mul, self.sat_clip = cfg, mul, sat_clip
        width = entry_bits(cfg, "acc")
        super().__init__({
            "opcode": In(ALU_OPCODE_BITS),
            "use_imm": In(1),
            "imm": In(signed(ALU_IMM_BITS)),
            "dst": In(width),
            "src": In(width),
            "result": Out(width),
        })

    def elaborate(self, platform):
        m = Module()
        cfg = self.cfg
        dst = element_view(cfg, "acc", self.dst)
        src = element_view(cfg, "acc", self.src)
        result = element_view(cfg, "acc", self.result)
        for k in range(len(dst)):
            operand = Signal(signed(cfg.acc_bits), name=f"operand_{k}")
            m.d.comb += operand.eq(Mux(self.use_imm, self.imm, src[k]))
            m.d.comb += result[k].eq(self._lane(m, k, dst[k], src[k], operand))
        return m

    def _lane(self, m: Module, k: int, a, src, operand):
        bits = self.cfg.acc_bits
        out = Signal(signed(bits), name=f"lane_{k}")
        # SAT: the sum (dst + src, or dst) shifted by the immediate
        total = Signal(signed(bits), name=f"sat_sum_{k}")
        m.d.comb += total.eq(Mux(self.use_imm, a, (a + src)[:bits]))
        sat = shift_signed(m, self.cfg, total, self.imm, f"sat_{k}")
        if self.sat_clip:
            sat = sat_clip(self.cfg, sat, self.imm[sat_relu_bit(self.cfg)])
        with m.Switch(self.opcode):
            with m.Case(AluOp.MIN):
                m.d.comb += out.eq(Mux(a < operand, a, operand))
            with m.Case(AluOp.MAX):
                m.d.comb += out.eq(Mux(a > operand, a, operand))
            with m.Case(AluOp.ADD):
                m.d.comb += out.eq((a + operand)[:bits])
            with m.Case(AluOp.SHR):
                m.d.comb += out.eq(shift_signed(m, self.cfg, a, operand, f"shr_{k}"))
            with m.Case(AluOp.MOV):
                m.d.comb += out.eq(operand)
            with m.Case(AluOp.SAT):
                m.d.comb += out.eq(sat)
            if self.mul:
                with m.Case(AluOp.MUL):
                    m.d.comb += out.eq(wrap_to(mul_operand(self.cfg, a)
                                               * mul_operand(self.cfg, operand), bits))
            with m.Default():
                m.d.comb += out.eq(a)
        return out


def shift_signed(m: Module, cfg: Config, a, amount, name: str):
    """``a`` shifted right by ``amount``'s low shift_bits bits read as a signed number
    (negative: left, wrapping to acc_bits)."""
    shift = Signal(signed(cfg.shift_bits), name=f"{name}_amount")
    out = Signal(signed(cfg.acc_bits), name=name)
    m.d.comb += shift.eq(amount[:cfg.shift_bits])
    left = (a << (-shift).as_unsigned())[:cfg.acc_bits]
    right = a >> shift.as_unsigned()
    m.d.comb += out.eq(Mux(shift < 0, left, right))
    return out


def sat_clip(cfg: Config, x, relu):
    """``x`` (signed acc_bits) clipped to the signed out_bits range, lower bound 0 with
    ``relu``. The range tests look at the bits above the out range (all equal to the
    sign when ``x`` fits): reductions, no magnitude comparator's carry chain."""
    top = (1 << (cfg.out_bits - 1)) - 1
    sign = x[-1]
    upper = x[cfg.out_bits - 1:]                 # the out range's sign bit and above
    over = ~sign & upper.any()                   # x > top
    under = sign & Mux(relu, 1, ~upper.all())    # x < 0 (relu) or x < -top - 1
    return Mux(over, top, Mux(under, Mux(relu, 0, -top - 1), x))


def mul_products(cfg: Config) -> int:
    """Multipliers per lane of the pipelined MUL: one signed product when ``mul_bits`` fits
    a DSP operand (18 bits on ECP5), else three half-width unsigned ones (the default
    acc_bits-wide MUL keeps that form at every width)."""
    return 1 if cfg.mul_bits <= min(DSP_OPERAND_BITS, cfg.acc_bits - 1) else 3


def mul_operand(cfg: Config, x):
    """A MUL operand as the multiplier reads it: the low ``cfg.mul_bits`` bits, signed."""
    return x[:cfg.mul_bits].as_signed()


def wrap_to(value, bits: int):
    """A signed ``value`` wrapped to ``bits``: its low bits, or itself when it is narrower
    (then it sign-extends where it is assigned)."""
    return value[:bits] if len(value) > bits else value


def mul_operand_pairs(bits: int, a, b) -> tuple:
    """The three unsigned operand pairs whose products sum to ``a * b`` mod 2**bits, each
    at most ceil(bits/2) x ceil(bits/2) bits (one DSP multiplier each): ``lo = aL*bL``,
    and the two cross products ``aL*bH``, ``aH*bL`` that form ``mid`` later."""
    h = (bits + 1) // 2
    al, ah = a.as_unsigned()[:h], a.as_unsigned()[h:bits]
    bl, bh = b.as_unsigned()[:h], b.as_unsigned()[h:bits]
    return (al, bl), (al, bh), (ah, bl)


def mul_cross(bits: int, cross0, cross1):
    """The low bits of the two cross products' sum that reach the result (a register
    between :func:`mul_cross` and :func:`mul_combine` splits the two carry chains)."""
    return (cross0 + cross1)[:mul_cross_bits(bits)]


def mul_cross_bits(bits: int) -> int:
    """Width of :func:`mul_cross`: the result bits above the low half."""
    return bits - (bits + 1) // 2


def mul_combine(bits: int, lo, cross):
    """``a * b`` mod 2**bits from ``lo`` of :func:`mul_operand_pairs` and
    :func:`mul_cross`."""
    h = (bits + 1) // 2
    return (lo + (cross << h))[:bits]
