"""The ALU's sliced shifter (hw/alu_shift.py) equals the word-level shift for every
distance and direction, with its slices' controls apart (as the FPGA flow builds them)."""
import numpy as np
from amaranth.hdl import Module, Signal, signed
from amaranth.sim import Simulator

from vtalab.hw.alu_shift import SHIFT_SLICE, shifted


def test_sliced_shift_equals_the_word_level_shift():
    bits = 32
    m = Module()
    v = Signal(signed(bits))
    control = Signal(6)                              # distance (5 bits), direction
    copies = [Signal(6, name=f"copy_{k}") for k in range(bits // SHIFT_SLICE)]
    m.d.comb += [c.eq(control) for c in copies]
    sliced, word = Signal(signed(bits)), Signal(signed(bits))
    m.d.comb += [sliced.eq(shifted(v, copies)), word.eq(shifted(v, [control]))]
    rng = np.random.default_rng(2)
    values = [0, -1, 1, -(1 << 31), (1 << 31) - 1] + [int(x) for x in
                                                        rng.integers(-(1 << 31), 1 << 31, 20)]
    mismatches = []

    async def bench(ctx):
        for value in values:
            for ctl in range(64):
                ctx.set(v, value)
                ctx.set(control, ctl)
                dist, left = ctl & 31, ctl >> 5
                want = ((value << dist) if left else (value >> dist)) & 0xFFFFFFFF
                want -= (want >> 31) << 32
                got = (ctx.get(sliced), ctx.get(word))
                if got != (want, want):
                    mismatches.append((value, ctl, got, want))

    sim = Simulator(m)
    sim.add_testbench(bench)
    sim.run()
    assert not mismatches, mismatches[:5]
