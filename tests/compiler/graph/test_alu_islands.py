"""ALU islands: a float island (dequantize -> op -> quantize) and the `alu` node that replaces
it give the same int8 value for every pair of int8 inputs, at exponents that need aligning,
rounding (half to even) or left shifts; islands the ALU cannot compute exactly stay float."""
import numpy as np
import pytest

from vtalab.compiler.graph import GraphBuilder
from vtalab.compiler.graph.int8_ref import run_int8
from vtalab.compiler.graph.opdefs.alu import round_shift
from vtalab.compiler.graph.passes.alu_islands import alu_islands
from vtalab.compiler.graph.passes.partition import partition, partition_report
from vtalab.compiler.graph.passes.rewrite import PassContext

# every int8 pair: a runs over rows, b over columns
A = np.repeat(np.arange(-128, 128), 256).astype(np.int8).reshape(256, 256)
B = A.T.copy()


def _q(e):
    return dict(scale=np.float32(2.0 ** -e), zero_point=np.int8(0), axis=1)


def _island(ea, eb, eo, build, shape_b=(256, 256)):
    b = GraphBuilder()
    a_in, b_in = b.add_input("a", (256, 256), "int8"), b.add_input("b", shape_b, "int8")
    fa, fb = b.op("dequantize", a_in, **_q(ea)), b.op("dequantize", b_in, **_q(eb))
    b.set_outputs([b.op("quantize", build(b, fa, fb), dtype="int8", **_q(eo))])
    graph = b.build()
    return graph, alu_islands(graph, PassContext())


def _check_exact(graph, alu):
    assert [n.op for n in alu.nodes] == ["alu"]
    feeds = {"a": A, "b": B[:, :graph.types["b"].shape[1]] if graph.types["b"].shape[1] < 256
             else B}
    want = run_int8(graph, feeds)[graph.outputs[0]]
    got = run_int8(alu, feeds)[alu.outputs[0]]
    assert np.array_equal(got, want)


def test_round_shift_is_half_to_even():
    n = np.arange(-20, 21)
    assert np.array_equal(round_shift(n, 2), np.rint(n / 4).astype(np.int64))
    assert np.array_equal(round_shift(n, -3), n * 8)


BINARY_CASES = [(5, 5, 5), (5, 5, 4), (7, 3, 2), (3, 7, 6), (4, 4, 6), (0, 15, 3), (6, 2, 9)]


@pytest.mark.parametrize("op", ["add", "sub", "max", "min"])
@pytest.mark.parametrize("ea, eb, eo", BINARY_CASES)
def test_binary_islands_are_exact(op, ea, eb, eo):
    _check_exact(*_island(ea, eb, eo, lambda b, x, y: b.op(op, x, y)))


@pytest.mark.parametrize("ea, eb, eo", [(7, 7, 9), (5, 4, 3), (6, 6, 12), (2, 3, 0)])
def test_mul_islands_are_exact(ea, eb, eo):
    _check_exact(*_island(ea, eb, eo, lambda b, x, y: b.op("mul", x, y)))


UNARY = {"neg": {}, "abs": {}, "leaky_relu_half": dict(alpha=0.5),
         "leaky_relu_64th": dict(alpha=1 / 64), "relu": {}}


@pytest.mark.parametrize("name", sorted(UNARY))
@pytest.mark.parametrize("e, eo", [(5, 5), (5, 4), (4, 6), (7, 1)])
def test_unary_islands_are_exact(name, e, eo):
    op = name.split("_half")[0].split("_64th")[0]
    _check_exact(*_island(e, e, eo, lambda b, x, y: b.op(op, x, **UNARY[name])))


@pytest.mark.parametrize("post, eo", [
    (lambda b, v: b.op("div", v, b.add_const("two", np.float32(2))), 5),      # Mean of two
    (lambda b, v: b.op("clip", v, lo=-0.3, hi=1.7), 6),
    (lambda b, v: b.op("relu", b.op("mul", v, b.add_const("q", np.float32(0.25)))), 7)])
def test_scales_and_clips_after_the_op_are_exact(post, eo):
    _check_exact(*_island(5, 4, eo, lambda b, x, y: post(b, b.op("add", x, y))))


@pytest.mark.parametrize("why, ea, eb, build, shape_b", [
    ("more than 15 apart: float32 rounds", 0, 16,
     lambda b, x, y: b.op("add", x, y), (256, 256)),
    ("slope 0.1 is not a power of two", 5, 5,
     lambda b, x, y: b.op("leaky_relu", x, alpha=0.1), (256, 256)),
    ("the ALU combines entries of one shape", 5, 5, lambda b, x, y: b.op("add", x, y),
     (256, 1)),
    ("read by softmax, not requantised", 5, 5,
     lambda b, x, y: b.op("softmax", b.op("max", x, y), axis=-1), (256, 256)),
    (None, 5, 5, lambda b, x, y: b.op("div", x, y), (256, 256)),       # not an ALU op
])
def test_what_the_alu_cannot_compute_exactly_stays_float(why, ea, eb, build, shape_b):
    graph, alu = _island(ea, eb, 5, build, shape_b)
    assert "alu" not in [n.op for n in alu.nodes]
    reasons = list(alu.meta.get("float_reasons", {}).values())
    assert (why is None and not reasons) or any(why in r for r in reasons), reasons


def test_the_partition_report_says_why_an_op_stays_float():
    _, alu = _island(5, 5, 5, lambda b, x, y: b.op("add", x, y), (256, 1))
    report = partition_report(partition(alu, PassContext()))
    line = next(line for line in report.splitlines() if " add " in line)
    assert "cpu" in line and "float32 add: not quantised (operand shapes" in line
