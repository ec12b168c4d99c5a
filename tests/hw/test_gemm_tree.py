"""hw/gemm_tree.py: the exact (synthesized) and wide (simulated) GEMM datapaths give the
accumulator values of numpy's int32 reference, extremes included."""
import numpy as np
import pytest
from amaranth.hdl import Cat, Const, Module
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out
from amaranth.sim import Simulator

from vtalab.hw.gemm import element_view
from vtalab.hw.gemm_tree import GemmTree
from vtalab.hw.sram import entry_bits
from vtalab.hw.verilog import SimulatorPlatform
from vtalab.spec import preset

CFG = preset("tiny")
LATENCY = 4          # operands, products, partial sums, tree sums: four registers


class BothTrees(wiring.Component):
    def __init__(self, cfg):
        self.cfg = cfg
        bits = entry_bits(cfg, "acc")
        super().__init__({"inp": In(entry_bits(cfg, "inp")), "wgt": In(entry_bits(cfg, "wgt")),
                          "acc": In(bits), "exact": Out(bits), "wide": Out(bits)})

    def elaborate(self, platform):
        m = Module()
        acc = element_view(self.cfg, "acc", self.acc)
        for out, target in ((self.exact, None), (self.wide, SimulatorPlatform())):
            tree = GemmTree(m, self.cfg, target)
            tree.operands(self.inp, self.wgt, Const(1))
            sums = tree.sums({4: Const(1), 5: Const(1), 6: Const(1)})
            m.d.comb += out.eq(Cat(*(tree.accumulate(acc[k], s) for k, s in enumerate(sums))))
        return m


def _pack(values, bits):
    return sum((int(v) & ((1 << bits) - 1)) << (bits * k) for k, v in enumerate(values))


def _unpack(word, count, bits):
    raw = np.array([(word >> (bits * k)) & ((1 << bits) - 1) for k in range(count)], np.int64)
    return np.where(raw >= 1 << (bits - 1), raw - (1 << bits), raw)


def _cases(rng):
    shape_i = (CFG.batch, CFG.block_in)
    shape_w = (CFG.block_out, CFG.block_in)
    shape_a = (CFG.batch, CFG.block_out)
    lo, hi = -(1 << 31), (1 << 31) - 1
    yield np.full(shape_i, -128), np.full(shape_w, -128), np.full(shape_a, hi)   # wraps
    yield np.full(shape_i, 127), np.full(shape_w, -128), np.full(shape_a, lo)     # wraps
    yield np.full(shape_i, -128), np.full(shape_w, 127), np.zeros(shape_a)
    for _ in range(20):
        yield (rng.integers(-128, 128, shape_i), rng.integers(-128, 128, shape_w),
               rng.integers(lo, hi, shape_a, endpoint=True))


@pytest.mark.parametrize("seed", [0])
def test_exact_and_wide_gemm_trees_match_the_int32_reference(seed):
    dut = BothTrees(CFG)
    sim = Simulator(dut)
    sim.add_clock(1e-6)
    acc_count = CFG.batch * CFG.block_out
    failures = []

    async def bench(ctx):
        for inp, wgt, acc in _cases(np.random.default_rng(seed)):
            ctx.set(dut.inp, _pack(inp.ravel(), 8))
            ctx.set(dut.wgt, _pack(wgt.ravel(), 8))
            ctx.set(dut.acc, _pack(acc.ravel(), CFG.acc_bits))
            await ctx.tick().repeat(LATENCY)
            want = (acc + inp @ wgt.T).ravel()
            want = (want + (1 << 31)) % (1 << 32) - (1 << 31)
            for name in ("exact", "wide"):
                got = _unpack(ctx.get(getattr(dut, name)), acc_count, CFG.acc_bits)
                if not np.array_equal(got, want):
                    failures.append((name, inp.tolist(), wgt.tolist(), got, want))

    sim.add_testbench(bench)
    sim.run()
    assert not failures, failures[:2]
