"""The ECP5 product (a MULT18X18D with its output register, under the cell model) against
the generic product register and against a * b one cycle late: every int8 x int8 pair,
with the clock enable toggling."""
from __future__ import annotations

import itertools

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import FallingEdge, RisingEdge


@cocotb.test()
async def test_every_int8_pair_with_enable(dut):
    cocotb.start_soon(Clock(dut.clk, 10, unit="ns").start())
    dut.rst.value = 0
    dut.en.value = 1
    expected = None
    pairs = itertools.product(range(-128, 128), repeat=2)
    checked = 0
    for step, (a, b) in enumerate(pairs):
        await FallingEdge(dut.clk)
        if expected is not None:
            dsp, ref = dut.dsp.value.to_signed(), dut.ref.value.to_signed()
            assert dsp == ref == expected, (step, a, b, dsp, ref, expected)
            checked += 1
        enable = step % 7 != 3                  # hold one cycle in seven
        dut.a.value, dut.b.value, dut.en.value = a & 0xFF, b & 0xFF, int(enable)
        if enable:
            expected = a * b
        await RisingEdge(dut.clk)
    assert checked == 256 * 256 - 1
