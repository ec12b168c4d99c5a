"""The ALU's MUL at every operand width (Config.alu_mul_bits): the one-cycle reference
(hw/alu.py) and the pipelined lanes of the exec pipe (hw/alu_stages.py) give the functional
simulator's values, extremes included, and a narrow MUL costs one multiplier per lane."""
import numpy as np
import pytest
from amaranth.hdl import Const, Module, Signal
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out
from amaranth.sim import Simulator

from vtalab.hw.alu import AluCore, mul_products
from vtalab.hw.alu_stages import AluStages
from vtalab.hw.exec_pipe import op_layout
from vtalab.hw.sram import entry_bits
from vtalab.sim.alu import alu_apply, wrap
from vtalab.spec import preset
from vtalab.spec.isa import AluOp

from .benches.tb_units import pack, unpack

LATENCY = 8          # immediate, operands, lanes, products, sums, product, row: 3..10


class BothAlus(wiring.Component):
    """AluCore and AluStages on the same rows, MUL with a register operand or immediate."""

    def __init__(self, cfg):
        self.cfg = cfg
        bits = entry_bits(cfg, "acc")
        super().__init__({"dst": In(bits), "src": In(bits), "use_imm": In(1), "imm": In(16),
                          "core": Out(bits), "stages": Out(bits)})

    def elaborate(self, platform):
        m = Module()
        m.submodules.core = core = AluCore(self.cfg)
        m.d.comb += [core.opcode.eq(AluOp.MUL), core.use_imm.eq(self.use_imm),
                     core.imm.eq(self.imm), core.dst.eq(self.dst), core.src.eq(self.src),
                     self.core.eq(core.result)]
        op = Signal(op_layout())
        view = data.View(op_layout(), op)
        m.d.comb += [view.is_alu.eq(1), view.alu_opcode.eq(AluOp.MUL),
                     view.use_imm.eq(self.use_imm), view.imm.eq(self.imm)]
        alu, on = AluStages(m, self.cfg, platform), Const(1)
        alu.immediate(view, on)
        alu.operands(view, self.dst, self.src, on)
        alu.lanes(view, on)
        alu.select(view, on)
        alu.shift(view, on)
        alu.clip(view, on)
        m.d.comb += self.stages.eq(alu.result(on))
        return m


def _rows(cfg, rng):
    lo, hi = -(1 << (cfg.acc_bits - 1)), (1 << (cfg.acc_bits - 1)) - 1
    lanes = cfg.batch * cfg.block_out
    yield np.full(lanes, lo), np.full(lanes, lo)
    yield np.full(lanes, hi), np.full(lanes, lo)
    m = cfg.mul_bits
    edge = [-(1 << (m - 1)), (1 << (m - 1)) - 1, 1 << (m - 1), (1 << m) - 1, -1, 0]
    yield np.resize(edge, lanes), np.resize(edge[::-1], lanes)
    for _ in range(12):
        yield (rng.integers(lo, hi, lanes, endpoint=True),
               rng.integers(lo, hi, lanes, endpoint=True))


@pytest.mark.parametrize("mul_bits", [0, 24, 18, 12])
def test_both_alus_multiply_like_the_functional_simulator(mul_bits):
    cfg = preset("tiny").replace(alu_mul_bits=mul_bits)
    dut, lanes = BothAlus(cfg), cfg.batch * cfg.block_out
    sim = Simulator(dut)
    sim.add_clock(1e-6)
    failures = []

    async def bench(ctx):
        rng = np.random.default_rng(mul_bits)
        for dst, src in _rows(cfg, rng):
            for use_imm, imm in ((False, 0), (True, -32768), (True, 32767), (True, -3)):
                ctx.set(dut.dst, pack(dst, cfg.acc_bits))
                ctx.set(dut.src, pack(src, cfg.acc_bits))
                ctx.set(dut.use_imm, use_imm)
                ctx.set(dut.imm, imm & 0xFFFF)
                await ctx.tick().repeat(LATENCY)
                want = alu_apply(cfg, AluOp.MUL, dst.astype(np.int64),
                                 np.int64(imm) if use_imm else src.astype(np.int64))
                for name in ("core", "stages"):
                    got = unpack(ctx.get(getattr(dut, name)), cfg.acc_bits, lanes)
                    if not np.array_equal(got, want):
                        failures.append((name, use_imm, imm, dst, src, got, want))

    sim.add_testbench(bench)
    sim.run()
    assert not failures, failures[:2]


def test_narrow_mul_reads_the_low_bits_as_signed():
    cfg = preset("tiny").replace(alu_mul_bits=12)
    a = np.array([0x1FFF, 0x800, 3, -5], dtype=np.int64)      # low 12 bits: -1, -2048, 3, -5
    b = np.array([7, 2, 0x1002, 1 << 30], dtype=np.int64)     # low 12 bits: 7, 2, 2, 0
    assert alu_apply(cfg, AluOp.MUL, a, b).tolist() == [-7, -4096, 6, 0]
    full = preset("tiny")
    assert alu_apply(full, AluOp.MUL, a, b).tolist() == wrap(a * b, 32).tolist()
    assert wrap(a * b, 32)[3] == -(1 << 30)


@pytest.mark.parametrize("mul_bits, products", [(0, 3), (32, 3), (24, 3), (18, 1), (8, 1)])
def test_multipliers_per_lane(mul_bits, products):
    assert mul_products(preset("tiny").replace(alu_mul_bits=mul_bits)) == products
