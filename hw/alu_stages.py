"""The ALU lanes of the exec pipe, spread over stages 3 to 9 for Fmax.

The same function as :class:`vtalab.hw.alu.AluCore` (which stays the one-cycle reference),
cut so that no stage has more than one carry chain or one barrel shifter in series, and
no carry chain starts behind a mux:

    stage 3  the immediate at the lane width and its shift as a direction and a distance,
             registered (once per micro-op)
    stage 4  per lane: a (the dst element: with fewer lanes than elements, ``Config.
             alu_lanes``, the one of the beat, hw/alu_beats.py) and operand = imm or src
             element, registered;
             the immediate's shift (SAT's, or SHR's with use_imm) as a direction and a
             distance, and stage 5's selects, registered (from the micro-op's fields)
    stage 5  per lane, registered (and stage 6's selects, decoded from the opcode):
               v = a, or the sum a + src for SAT without an immediate (what SHR/SAT shift,
                   and what MIN/MAX/default pass)
               w = a + operand for ADD, else the operand (MIN/MAX/MOV)
               cmp = a < operand (MIN) or a >= operand (MAX: the same pick as a >
                     operand, a tie's two values being equal), one comparator
               the shift as a direction and a distance (the src element's, or stage 4's);
               MUL's operand pairs into the DSP input registers: three half-width ones, or
             with ``Config.mul_bits`` at most a DSP operand (18) the two operands; with
             fewer multipliers than lanes (``Config.alu_mul_lanes``) each takes the
             operands of the beat's lane (hw/alu_beats.py)
    stage 6  the shift by the distance's high bits and the AND-OR select of v and w,
             registered; MUL's products (DSP output registers, like the GEMM products:
             hw/ecp5_dsp.py)
    stage 7  the shift by the distance's low bits, ORed into the select, registered;
             MUL's low product and cross products summed (or its one product wrapped),
             registered per element (on its multiplier's beat)
    stage 8  SAT's clip to the out range (the rest pass), registered per lane; MUL's low
             product plus the cross sum, registered per element
    stage 9  MUL's products or stage 8's lanes, registered per element on its beat: the
             row the exec pipe's accumulate stage takes

The selects decoded from the micro-op are registered once per lane when synthesized
(copies placed beside their lanes, hw/registers.py), once for cycle simulators.
"""
from __future__ import annotations

from amaranth.hdl import Array, Const, Module, Mux, Signal, signed, unsigned
from amaranth.utils import exact_log2

from vtalab.spec import Config
from vtalab.spec.isa import AluOp, sat_relu_bit

from .alu import (mul_combine, mul_cross, mul_cross_bits, mul_operand, mul_operand_pairs,
                  mul_products, sat_clip, wrap_to)
from .ecp5_dsp import registered_product
from .gemm import element_view
from .registers import enabled_register, replicated_register, replicates
from .sram import entry_bits
from .verilog import for_simulator

#: distance bits the shift takes in stage 7 (the rest in stage 6): neither stage has
#: the whole barrel shifter behind its distance register's fan-out
FINE_SHIFT_BITS = 2


class AluStages:
    """Builds the lanes into ``m``: call :meth:`immediate` (stage 3), :meth:`operands`,
    :meth:`lanes`, :meth:`select`, :meth:`shift`, :meth:`clip` (stages 4..8), then
    :meth:`result` (stage 9, registered)
    with each stage's registered micro-op fields (``op`` layout of exec_pipe) and the
    enable of its registers."""

    def __init__(self, m: Module, cfg: Config, platform=None, beat=None):
        self.m, self.cfg, self.platform = m, cfg, platform
        self.bits = cfg.acc_bits
        self.elements = entry_bits(cfg, "acc") // cfg.acc_bits          # of an acc row
        self.lanes_count = cfg.alu_units
        # lanes and MUL's multipliers, each taking alu_beats / mul_beats elements one per
        # cycle (hw/alu_beats.py: ``beat`` holds the beat index of stages 4..8)
        self.alu_beats, self.mul_beats, self.beat = cfg.alu_beats, cfg.mul_beats, beat
        self._beat_flags = {}
        # a MUL at most a DSP wide is one signed product per lane, else three unsigned ones
        self.one_product = mul_products(cfg) == 1

    def _reg(self, shape, name, enable, value):
        return enabled_register(self.m, value, enable, name, shape)

    def _lane_regs(self, shape, name, enable, value, count=None) -> list:
        """A control register per lane (or ``count``), all holding ``value``: in the open
        FPGA flow copies placed beside their lanes (hw/registers.py; the synthesized
        datapath loads every cycle, ``enable`` is constant there), elsewhere one shared
        register."""
        count = count or self.lanes_count
        if not replicates(self.platform):
            return [self._reg(shape, name, enable, value)] * count
        shaped = Signal(shape, name=f"{name}_d")
        self.m.d.comb += shaped.eq(value)
        return replicated_register(self.m, self.platform, shaped, count, name)

    def _in_beat(self, stage: int, beats: int, index: int):
        """The beat of ``stage`` is element ``index`` of a group of ``beats`` (the low
        bits of the beat index: every beat count is a power of two); always with one.
        A flip-flop loaded with the test of the stage before's beat (each stage's beat is
        the one before's a cycle later, hw/alu_beats.py): the clock enables of a stage's
        wide registers are not behind a decoder."""
        if beats == 1:
            return Const(1)
        key = (stage, beats, index)
        if key not in self._beat_flags:
            self._beat_flags[key] = self._reg(
                1, f"alu_in_beat{stage}_{index}_of_{beats}", Const(1),
                self.beat[stage - 1][:exact_log2(beats)] == index)
        return self._beat_flags[key]

    def _mul_enable(self, op, enable):
        """The enable of MUL's registers: every cycle when synthesized (only a MUL reads
        them, a stage later), else only for a MUL."""
        return enable if not for_simulator(self.platform) else \
            enable & (op.alu_opcode == AluOp.MUL)

    def immediate(self, op, enable) -> None:
        """The immediate at the lane width, once per micro-op (not once per lane)."""
        self.imm = self._reg(signed(self.bits), "alu4_imm", enable, op.imm)
        self.use_imm = self._lane_regs(1, "alu4_use_imm", enable, op.use_imm)
        # the immediate's shift as a direction and a distance, once (the lanes' copies
        # are loaded from these registers, not from the negation)
        amount = op.imm[:self.cfg.shift_bits].as_signed()
        self.imm_left4 = self._reg(1, "alu4_imm_left", enable, amount < 0)
        self.imm_dist4 = self._reg(unsigned(self.cfg.shift_bits), "alu4_imm_dist", enable,
                                   Mux(amount < 0, -amount, amount))

    def operands(self, op, dst_row, src_row, enable) -> None:
        """Per lane a and the operand (imm or src element); the shift taken from the
        immediate and stage 5's selects, decoded from the micro-op's fields."""
        cfg, sb, opcode = self.cfg, self.cfg.shift_bits, op.alu_opcode
        dst, src = element_view(cfg, "acc", dst_row), element_view(cfg, "acc", src_row)
        self.a = [self._reg(signed(self.bits), f"alu5_a_{k}", enable,
                            self._lane_element(dst, k, "a"))
                  for k in range(self.lanes_count)]
        self.operand = [self._reg(signed(self.bits), f"alu5_operand_{k}", enable,
                                  Mux(self.use_imm[k], self.imm,
                                      self._lane_element(src, k, "src")))
                        for k in range(self.lanes_count)]
        self.imm_shift = self._lane_regs(1, "alu5_imm_shift", enable,
                                         (opcode == AluOp.SAT) | op.use_imm)
        self.imm_left = self._lane_regs(1, "alu5_imm_left", enable, self.imm_left4)
        self.imm_dist = self._lane_regs(unsigned(sb), "alu5_imm_dist", enable, self.imm_dist4)
        self.v_sum = self._lane_regs(1, "alu5_v_sum", enable,
                                     (opcode == AluOp.SAT) & ~op.use_imm)
        self.w_sum = self._lane_regs(1, "alu5_w_sum", enable, opcode == AluOp.ADD)
        self.is_max = self._lane_regs(1, "alu5_is_max", enable, opcode == AluOp.MAX)

    def _lane_element(self, row, lane: int, name: str):
        """Lane ``lane``'s element of ``row``: its own, or with several beats element
        ``lane * alu_beats + beat`` (the beat of stage 4)."""
        if self.alu_beats == 1:
            return row[lane]
        value = Signal(signed(self.bits), name=f"alu_{name}_sel_{lane}")
        group = [row[lane * self.alu_beats + j] for j in range(self.alu_beats)]
        self.m.d.comb += value.eq(Array(group)[self.beat[4][:exact_log2(self.alu_beats)]])
        return value

    def lanes(self, op, enable) -> None:
        """v, w, cmp and the shift per lane; MUL's operand pairs (used only when the
        operand is src: then ``operand`` is the src element, so is the shift amount)."""
        bits, sb = self.bits, self.cfg.shift_bits
        self.regs = []
        self.mul_operand_enable = self._mul_enable(op, enable)
        self._decode_selects(op.alu_opcode, enable)
        for k, (a, operand) in enumerate(zip(self.a, self.operand)):
            total = Signal(signed(bits), name=f"alu_sum_{k}")
            self.m.d.comb += total.eq((a + operand)[:bits])
            amount = operand[:sb].as_signed()           # the src element's, when used
            self.regs.append({
                "v": self._reg(signed(bits), f"alu6_v_{k}", enable,
                               Mux(self.v_sum[k], total, a)),
                "w": self._reg(signed(bits), f"alu6_w_{k}", enable,
                               Mux(self.w_sum[k], total, operand)),
                "cmp": self._reg(1, f"alu6_cmp_{k}", enable, (a < operand) ^ self.is_max[k]),
                "left": self._reg(1, f"alu6_left_{k}", enable,
                                  Mux(self.imm_shift[k], self.imm_left[k], amount < 0)),
                "dist": self._reg(unsigned(sb), f"alu6_dist_{k}", enable,
                                  Mux(self.imm_shift[k], self.imm_dist[k],
                                      Mux(amount < 0, -amount, amount))),
            })
        self.multipliers = [{"pairs": self._mul_pairs(*self._beat_operands(i), i)}
                            for i in range(self.cfg.mul_lanes)]

    def _beat_operands(self, unit: int) -> tuple:
        """Multiplier ``unit``'s a and operand: its lane's, or with fewer multipliers
        than lanes those of the lane holding element ``unit * mul_beats + beat`` (their
        low mul_bits, what MUL reads): lane ``unit * share + beat // alu_beats``."""
        share = self.lanes_count // self.cfg.mul_lanes
        if share == 1:
            return self.a[unit], self.operand[unit]
        lanes = range(unit * share, (unit + 1) * share)
        which = self.beat[5][exact_log2(self.alu_beats):]
        chosen = []
        for name, values in (("a", self.a), ("b", self.operand)):
            value = Signal(signed(self.cfg.mul_bits), name=f"alu_mul_{name}_sel_{unit}")
            self.m.d.comb += value.eq(Array(mul_operand(self.cfg, values[k])
                                            for k in lanes)[which])
            chosen.append(value)
        return tuple(chosen)

    def _mul_pairs(self, a, operand, k) -> tuple:
        """MUL's operand pairs: the two operands at mul_bits, or the three half-width
        pairs of the operands sign-extended from mul_bits to the lane."""
        if self.one_product:
            return ((mul_operand(self.cfg, a), mul_operand(self.cfg, operand)),)
        if self.cfg.mul_bits < self.bits:
            a, operand = (self._extended(x, f"alu_mul_{n}_{k}")
                          for n, x in (("a", a), ("b", operand)))
        return mul_operand_pairs(self.bits, a, operand)

    def _extended(self, x, name):
        wide = Signal(signed(self.bits), name=name)
        self.m.d.comb += wide.eq(mul_operand(self.cfg, x))
        return wide

    def _decode_selects(self, opcode, enable) -> None:
        """Stage 6's selects from the opcode, registered a stage ahead: flip-flops, not
        decoders, drive the 32-bit muxes of every lane."""
        minmax = (opcode == AluOp.MIN) | (opcode == AluOp.MAX)
        shifts = (opcode == AluOp.SHR) | (opcode == AluOp.SAT)
        takes_w = (opcode == AluOp.ADD) | (opcode == AluOp.MOV)
        passes_v = ~(minmax | shifts | takes_w | (opcode == AluOp.MUL))
        self.sel = {name: self._lane_regs(1, f"alu6_{name}", enable, value) for name, value in (
            ("minmax", minmax), ("shifts", shifts), ("takes_w", takes_w),
            ("passes_v", passes_v))}

    def select(self, op, enable) -> None:
        """Per lane the shift by the distance's high bits (both directions, then the
        direction picked) and the AND-OR select of v and w, registered; the selects that
        stage 7 needs carried; MUL's products registered (DSP output registers)."""
        m, bits, fine = self.m, self.bits, FINE_SHIFT_BITS
        self.lane7 = []
        for k, r in enumerate(self.regs):
            minmax, shifts, takes_w, passes_v = (self.sel[n][k] for n in (
                "minmax", "shifts", "takes_w", "passes_v"))
            v, w, coarse = r["v"], r["w"], r["dist"][fine:] << fine
            vw = Signal(signed(bits), name=f"alu_vw_{k}")
            m.d.comb += vw.eq(Mux(passes_v | (minmax & r["cmp"]), v, 0)
                              | Mux(takes_w | (minmax & ~r["cmp"]), w, 0))
            shifted = _shifted(v, r["left"], coarse, bits)
            self.lane7.append({
                "vw": self._reg(signed(bits), f"alu7_vw_{k}", enable, vw),
                "coarse": self._reg(signed(bits), f"alu7_coarse_{k}", enable, shifted),
                "left": self._reg(1, f"alu7_left_{k}", enable, r["left"]),
                "fine": self._reg(unsigned(fine), f"alu7_fine_{k}", enable, r["dist"][:fine]),
                "shifts": self._reg(1, f"alu7_shifts_{k}", enable, shifts),
            })
        mul = self._mul_enable(op, enable)
        for i, unit in enumerate(self.multipliers):
            unit["mul"] = [registered_product(m, self.platform, x, y, mul, f"alu7_mul_{i}_{n}",
                                              operand_enable=self.mul_operand_enable)
                           for n, (x, y) in enumerate(unit["pairs"])]

    def shift(self, op, enable) -> None:
        """Per lane the shift finished by the distance's low bits and ORed into the
        select, registered; SAT's flags for stage 8, from the micro-op; MUL's low product
        and cross sum into the element of each multiplier's beat."""
        m, bits = self.m, self.bits
        self.row8 = []
        for k, r in enumerate(self.lane7):
            x, fine = r["coarse"], r["fine"]
            shifted = _shifted(x, r["left"], fine, bits)
            lane = Signal(signed(bits), name=f"alu_lane_{k}")
            m.d.comb += lane.eq(r["vw"] | Mux(r["shifts"], shifted, 0))
            self.row8.append(self._reg(signed(bits), f"alu8_{k}", enable, lane))
        self.sat8 = self._lane_regs(1, "alu8_sat", enable, op.alu_opcode == AluOp.SAT)
        self.relu8 = self._lane_regs(1, "alu8_relu", enable, op.imm[sat_relu_bit(self.cfg)])
        mul = self._mul_enable(op, enable)
        self.lo8, self.cross8 = [], []
        for k in range(self.elements):
            self._mul_element(k, mul)

    def clip(self, op, enable) -> None:
        """SAT's lanes clipped (the rest as they are), registered per lane; MUL's
        products (low product plus cross sum, or its one product) per element."""
        cfg, bits, m = self.cfg, self.bits, self.m
        self.mul9 = self._lane_regs(1, "alu9_is_mul", enable, op.alu_opcode == AluOp.MUL,
                                    self.elements)
        self.lane9 = []
        for k, lane in enumerate(self.row8):
            value = Signal(signed(bits), name=f"alu_clipped_{k}")
            m.d.comb += value.eq(Mux(self.sat8[k], sat_clip(cfg, lane, self.relu8[k]), lane))
            self.lane9.append(self._reg(signed(bits), f"alu9_{k}", enable, value))
        mul = self._mul_enable(op, enable)
        self.product9 = []
        for k in range(self.elements):
            product = self.lo8[k] if self.one_product else mul_combine(
                bits, self.lo8[k], self.cross8[k])
            self.product9.append(self._reg(signed(bits), f"alu9_mul_{k}", mul, product))

    def _mul_element(self, k: int, mul) -> None:
        """Element ``k``'s MUL registers, loaded from its multiplier on its beat."""
        bits = self.bits
        unit, beat = divmod(k, self.mul_beats)
        products = self.multipliers[unit]["mul"]
        loads = mul & self._in_beat(7, self.mul_beats, beat)
        if self.one_product:
            self.lo8.append(self._reg(signed(bits), f"alu8_mul_{k}", loads,
                                      wrap_to(products[0], bits)))
            return
        lo, cross0, cross1 = products
        self.lo8.append(self._reg(bits, f"alu8_mul_lo_{k}", loads, lo[:bits]))
        self.cross8.append(self._reg(mul_cross_bits(bits), f"alu8_mul_cross_{k}", loads,
                                     mul_cross(bits, cross0, cross1)))

    def result(self, enable) -> Signal:
        """The row the accumulate stage takes, registered per element (beside its
        accumulator lane) on its lane's beat: MUL's product, or its lane's value. A MUL
        takes as many beats as the lanes or more (``mul_beats`` >= ``alu_beats``), and
        an element's last load, in the MUL's last ``alu_beats`` beats, finds its product
        complete (loaded at stage 7 on its multiplier's beat, no later)."""
        row = Signal(entry_bits(self.cfg, "acc"), reset_less=True, name="alu10")
        out = element_view(self.cfg, "acc", row)
        for k in range(self.elements):
            lane, beat = divmod(k, self.alu_beats)
            with self.m.If(enable & self._in_beat(9, self.alu_beats, beat)):
                self.m.d.sync += out[k].eq(Mux(self.mul9[k], self.product9[k],
                                               self.lane9[lane]))
        return row


def _shifted(x, left, distance, bits: int):
    """``x`` shifted left (kept to ``bits``) or arithmetically right by ``distance``."""
    return Mux(left, (x << distance)[:bits], x >> distance)
