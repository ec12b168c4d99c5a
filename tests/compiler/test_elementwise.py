"""Elementwise / broadcast ALU operations on the accumulator."""
import numpy as np
import pytest

from vtalab.spec import preset
from vtalab.compiler.topi import ElementwiseKnobs, Requant, elementwise, elementwise_reference
from vtalab.compiler.vta import build

from .fsim import run_fsim


@pytest.mark.parametrize("op", ["add", "mul", "min", "max"])
@pytest.mark.parametrize("broadcast", [False, True])
@pytest.mark.parametrize("name", ["default", "tiny"])
def test_elementwise(op, broadcast, name):
    cfg = preset(name)
    rq = Requant(shift=3, lo=-100, hi=100, bias=False)
    sch, args = elementwise(cfg, 8, op, broadcast, rq, ElementwiseKnobs(tile=2, vthreads=2))
    prog = build(sch, cfg, args)
    rng = np.random.default_rng(1)
    a = rng.integers(-5000, 5000, args[0].shape).astype(np.int32)
    b = rng.integers(-5000, 5000, args[1].shape).astype(np.int32)
    out = run_fsim(prog, {"a": a, "b": b})["out"]
    np.testing.assert_array_equal(out, elementwise_reference(a, b, op, rq))
