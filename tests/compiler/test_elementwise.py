"""Elementwise / broadcast ALU operations on the accumulator."""
import numpy as np
import pytest

from vtalab.spec import preset
from vtalab.spec.isa import alu_mul
from vtalab.compiler.topi import ElementwiseKnobs, Requant, elementwise, elementwise_reference
from vtalab.compiler.vta import build

from .fsim import run_fsim


@pytest.mark.parametrize("op", ["add", "mul", "min", "max"])
@pytest.mark.parametrize("broadcast", [False, True])
@pytest.mark.parametrize("name", ["default", "tiny", "tiny-mul12"])
def test_elementwise(op, broadcast, name):
    cfg = preset("tiny").replace(alu_mul_bits=12) if name == "tiny-mul12" else preset(name)
    rq = Requant(shift=3, lo=-100, hi=100, bias=False)
    sch, args = elementwise(cfg, 8, op, broadcast, rq, ElementwiseKnobs(tile=2, vthreads=2))
    prog = build(sch, cfg, args)
    rng = np.random.default_rng(1)
    a = rng.integers(-5000, 5000, args[0].shape).astype(np.int32)
    b = rng.integers(-5000, 5000, args[1].shape).astype(np.int32)
    out = run_fsim(prog, {"a": a, "b": b})["out"]
    np.testing.assert_array_equal(out, elementwise_reference(a, b, op, rq, cfg))


def test_a_narrow_mul_wraps_products_of_the_operands_low_bits():
    """alu_mul_bits = 12: 5000 is 904 in 12 bits; the compiled MUL and the reference
    agree on that (and differ from the full-width product)."""
    cfg = preset("tiny").replace(alu_mul_bits=12)
    rq8 = Requant(shift=0, lo=-128, hi=127, bias=False)
    sch, args = elementwise(cfg, 2, "mul", False, rq8)
    a = np.full(args[0].shape, 5000, np.int32)
    b = np.full(args[1].shape, -1, np.int32)
    out = run_fsim(build(sch, cfg, args), {"a": a, "b": b})["out"]
    assert alu_mul(cfg, 5000, -1) == -904 and alu_mul(preset("tiny"), 5000, -1) == -5000
    np.testing.assert_array_equal(out, elementwise_reference(a, b, "mul", rq8, cfg))
    assert (out == -128).all()
