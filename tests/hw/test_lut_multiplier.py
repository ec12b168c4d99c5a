# amaranth: UnusedElaboratable=no
"""hw/lut_multiplier.py: the LUT product equals a * b for every pair of int8 operands (and
of other widths), two cycles after its operands, and contains no multiplier cell for
Yosys' DSP mapper to take."""
import pytest
from amaranth.back import rtlil
from amaranth.hdl import Const, Module, Signal, signed
from amaranth.sim import Simulator

from vtalab.hw.lut_multiplier import gemm_dsp_products, split_product


def _lanes(a_bits, b_bits):
    """One split product per value of ``a`` (all lanes share ``b``): the product
    expression after its halves' register."""
    m = Module()
    b = Signal(signed(b_bits))
    lanes = []
    for value in range(-(1 << (a_bits - 1)), 1 << (a_bits - 1)):
        a = Const(value, signed(a_bits))
        out = Signal(signed(a_bits + b_bits), name=f"p{len(lanes)}")
        m.d.comb += out.eq(split_product(m, a, b, Const(1), f"mul{len(lanes)}"))
        lanes.append((value, out))
    return m, b, lanes


@pytest.mark.parametrize("a_bits,b_bits", [(8, 8), (4, 3), (5, 2), (3, 7)])
def test_split_product_is_exact_for_every_operand_pair(a_bits, b_bits):
    m, b, lanes = _lanes(a_bits, b_bits)
    wrong = []

    async def bench(ctx):
        for b_value in range(-(1 << (b_bits - 1)), 1 << (b_bits - 1)):
            ctx.set(b, b_value)
            await ctx.tick()
            wrong.extend((a, b_value, ctx.get(out)) for a, out in lanes
                         if ctx.get(out) != a * b_value)

    sim = Simulator(m)
    sim.add_clock(1e-6)
    sim.add_testbench(bench)
    sim.run()
    assert not wrong, wrong[:4]


def test_split_product_registers_its_operands_a_stage_before_with_operand_enable():
    m = Module()
    a, b = Signal(signed(8)), Signal(signed(8))
    out = Signal(signed(16))
    m.d.comb += out.eq(split_product(m, a, b, Const(1), "mul", operand_enable=Const(1)))
    seen, pairs = [], ((-128, -128), (127, -128), (-7, 93), (0, 0))

    async def bench(ctx):
        for a_value, b_value in pairs:
            ctx.set(a, a_value)
            ctx.set(b, b_value)
            await ctx.tick()
            seen.append(ctx.get(out))

    sim = Simulator(m)
    sim.add_clock(1e-6)
    sim.add_testbench(bench)
    sim.run()
    # a tick registers the operands set before it, the next one the halves of their product
    assert seen[1:] == [a * b for a, b in pairs[:-1]]


def test_split_product_has_no_multiplier_cell():
    m, _, _ = _lanes(8, 8)
    text = rtlil.convert(m, ports=[])
    assert "cell $add" in text and "$mul" not in text


def test_split_product_rejects_unsigned_or_one_bit_operands():
    with pytest.raises(TypeError, match="must be signed"):
        split_product(Module(), Signal(8), Signal(signed(8)), Const(1), "mul")
    with pytest.raises(TypeError, match="b at least 2 bits"):
        split_product(Module(), Signal(signed(8)), Signal(signed(1)), Const(1), "mul")


def test_gemm_dsp_products_caps_at_the_platform_budget():
    class Budget:
        vtalab_gemm_dsp_products = 100
    assert gemm_dsp_products(None, 256) == 256
    assert gemm_dsp_products(Budget(), 256) == 100
    assert gemm_dsp_products(Budget(), 64) == 64
