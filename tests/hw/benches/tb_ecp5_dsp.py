"""The ECP5 products (a MULT18X18D with its output register, under the cell model) against
the generic product register and against a * b one cycle late: every int8 x int8 pair, and
alongside them unsigned 16 x 16-bit pairs (corners, then seeded random), with the clock
enable toggling; then the products with registered operands (the DSP's input registers)
with both enables toggling at random."""
from __future__ import annotations

import itertools
import random

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import FallingEdge, RisingEdge


@cocotb.test()
async def test_every_int8_pair_with_enable(dut):
    cocotb.start_soon(Clock(dut.clk, 10, unit="ns").start())
    dut.rst.value = 0
    dut.en.value = 1
    dut.en_in.value = 0
    expected = None
    pairs = itertools.product(range(-128, 128), repeat=2)
    corners = [0, 1, 2, 0x7FFF, 0x8000, 0xFFFE, 0xFFFF]
    unsigned = itertools.chain(itertools.product(corners, repeat=2),
                               _random_pairs(random.Random(7)))
    checked = 0
    for step, ((a, b), (ua, ub)) in enumerate(zip(pairs, unsigned)):
        await FallingEdge(dut.clk)
        if expected is not None:
            dsp, ref = dut.dsp.value.to_signed(), dut.ref.value.to_signed()
            udsp, uref = int(dut.udsp.value), int(dut.uref.value)
            assert (dsp, udsp) == (ref, uref) == expected, (step, dsp, ref, udsp, uref, expected)
            checked += 1
        enable = step % 7 != 3                  # hold one cycle in seven
        dut.a.value, dut.b.value, dut.en.value = a & 0xFF, b & 0xFF, int(enable)
        dut.ua.value, dut.ub.value = ua, ub
        if enable:
            expected = (a * b, ua * ub)
        await RisingEdge(dut.clk)
    assert checked == 256 * 256 - 1


@cocotb.test()
async def test_registered_operands_with_both_enables(dut):
    cocotb.start_soon(Clock(dut.clk, 10, unit="ns").start())
    dut.rst.value = 0
    rng = random.Random(11)
    operands = (0, 0, 0, 0)                     # what the input registers hold
    expected, checked = None, 0
    for step in range(4000):
        await FallingEdge(dut.clk)
        if expected is not None:
            got = (dut.dsp2.value.to_signed(), dut.ref2.value.to_signed(),
                   int(dut.udsp2.value), int(dut.uref2.value))
            assert got == (expected[0], expected[0], expected[1], expected[1]), (step, got)
            checked += 1
        a, b = rng.randrange(-128, 128), rng.randrange(-128, 128)
        ua, ub = next(_random_pairs(rng))
        en_in, en = rng.random() < 0.7, rng.random() < 0.7
        dut.a.value, dut.b.value, dut.ua.value, dut.ub.value = a & 0xFF, b & 0xFF, ua, ub
        dut.en_in.value, dut.en.value = int(en_in), int(en)
        if en:
            expected = (operands[0] * operands[1], operands[2] * operands[3])
        if en_in:
            operands = (a, b, ua, ub)
        await RisingEdge(dut.clk)
    assert checked > 3900


def _random_pairs(rng):
    while True:
        yield rng.randrange(1 << 16), rng.randrange(1 << 16)
