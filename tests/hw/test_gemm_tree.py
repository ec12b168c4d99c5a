"""hw/gemm_tree.py: the exact (synthesized) and wide (simulated) GEMM datapaths, and the
exact one as the RTL synthesis netlist builds it (operand copies, half its products from
LUTs: hw/lut_multiplier.py), give the accumulator values of numpy's int32 reference,
extremes included."""
import numpy as np
from amaranth.hdl import Cat, Const, Module
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out
from amaranth.sim import Simulator

from vtalab.hw.gemm import element_view
from vtalab.hw.forward import ACCUMULATE_STAGE
from vtalab.hw.gemm_tree import GemmTree
from vtalab.hw.sram import entry_bits
from vtalab.hw.verilog import SimulatorPlatform, synthesis_netlist_platform
from vtalab.sim.alu import wrap
from vtalab.spec import preset

from .benches.tb_units import pack, unpack

CFG = preset("tiny")
#: operands, their copies, copies again, products, landed products, partial sums, tree sums
LATENCY = ACCUMULATE_STAGE - 3


class BothTrees(wiring.Component):
    def __init__(self, cfg):
        self.cfg = cfg
        bits = entry_bits(cfg, "acc")
        super().__init__({"inp": In(entry_bits(cfg, "inp")), "wgt": In(entry_bits(cfg, "wgt")),
                          "acc": In(bits), "exact": Out(bits), "wide": Out(bits),
                          "split": Out(bits)})

    def elaborate(self, platform):
        m = Module()
        acc = element_view(self.cfg, "acc", self.acc)
        for out, target in ((self.exact, None), (self.wide, SimulatorPlatform()),
                            (self.split, synthesis_netlist_platform(self.cfg))):
            tree = GemmTree(m, self.cfg, target)
            tree.operands(self.inp, self.wgt, Const(1))
            sums = tree.sums({s: Const(1) for s in range(3, ACCUMULATE_STAGE)})
            m.d.comb += out.eq(Cat(*(tree.accumulate(acc[k], s) for k, s in enumerate(sums))))
        return m


def _limits(bits):
    return -(1 << (bits - 1)), (1 << (bits - 1)) - 1


def _cases(rng):
    shape_i = (CFG.batch, CFG.block_in)
    shape_w = (CFG.block_out, CFG.block_in)
    shape_a = (CFG.batch, CFG.block_out)
    i_lo, i_hi = _limits(CFG.elem_bits("inp"))
    w_lo, w_hi = _limits(CFG.elem_bits("wgt"))
    a_lo, a_hi = _limits(CFG.acc_bits)
    yield np.full(shape_i, i_lo), np.full(shape_w, w_lo), np.full(shape_a, a_hi)   # wraps
    yield np.full(shape_i, i_hi), np.full(shape_w, w_lo), np.full(shape_a, a_lo)   # wraps
    yield np.full(shape_i, i_lo), np.full(shape_w, w_hi), np.zeros(shape_a, np.int64)
    for _ in range(20):
        yield (rng.integers(i_lo, i_hi, shape_i, endpoint=True),
               rng.integers(w_lo, w_hi, shape_w, endpoint=True),
               rng.integers(a_lo, a_hi, shape_a, endpoint=True))


def test_exact_wide_and_split_gemm_trees_match_the_int32_reference():
    dut = BothTrees(CFG)
    sim = Simulator(dut)
    sim.add_clock(1e-6)
    acc_count = CFG.batch * CFG.block_out
    failures = []

    async def bench(ctx):
        for inp, wgt, acc in _cases(np.random.default_rng(0)):
            ctx.set(dut.inp, pack(inp, CFG.elem_bits("inp")))
            ctx.set(dut.wgt, pack(wgt, CFG.elem_bits("wgt")))
            ctx.set(dut.acc, pack(acc, CFG.acc_bits))
            await ctx.tick().repeat(LATENCY)
            want = wrap((acc + inp @ wgt.T).ravel(), CFG.acc_bits)
            for name in ("exact", "wide", "split"):
                got = unpack(ctx.get(getattr(dut, name)), CFG.acc_bits, acc_count)
                if not np.array_equal(got, want):
                    failures.append((name, inp.tolist(), wgt.tolist(), got, want))

    sim.add_testbench(bench)
    sim.run()
    assert not failures, failures[:2]
