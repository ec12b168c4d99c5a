"""Lookup tables: an elementwise float island over one int8 value becomes `lut`, whose
values are the island's own, bit for bit (on whole models and on crafted islands); what
is not one function of one int8 value stays float."""
import numpy as np
import pytest

from vtalab.compiler.graph import GraphBuilder, load_onnx
from vtalab.compiler.graph.int8_ref import run_int8
from vtalab.compiler.graph.passes import compile_graph
from vtalab.compiler.graph.passes.rewrite import PassContext
from vtalab.compiler.graph.passes.tabulate import tabulate

from ..exec.test_ops_int8 import transformer_model, vision_model
from .conftest import rand

SCALE = dict(scale=np.float32(2.0 ** -5), zero_point=np.int8(0), axis=1)


def _same_values(before, after, feeds):
    """(names that differ, names compared): the values of `before` that `after` computes."""
    a = run_int8(before, feeds, keep_all=True)
    b = run_int8(after, feeds, keep_all=True)
    shared = [v for v in a if v in b and v not in before.constants]
    return [v for v in shared if not np.array_equal(a[v], b[v])], shared


@pytest.mark.parametrize("make, shape, functions", [
    (vision_model, (1, 3, 8, 8), {("hard_swish",)}),
    (transformer_model, (1, 8, 16), {("gelu",)})])
def test_model_islands_become_tables_with_the_same_values(make, shape, functions):
    graph = load_onnx(make())
    quantised = compile_graph(graph, calibration=[rand(shape, s) for s in range(4)],
                              stop_after="quantize")
    tabled = tabulate(quantised, PassContext())
    luts = [n for n in tabled.nodes if n.op == "lut"]
    assert {n.attr("function") for n in luts} >= functions
    ends = {n.outputs[0] for n in quantised.nodes if n.op == "quantize"}
    for seed in (10, 11):
        differ, shared = _same_values(quantised, tabled, rand(shape, seed) * 3)
        assert differ == [] and ends <= set(shared)


def _island(build):
    """q (int8 input) -> dequantize -> build(builder, x) -> quantize, tabulated."""
    b = GraphBuilder()
    q = b.add_input("q", (2, 3, 4, 5), "int8")
    x = b.op("dequantize", q, **SCALE)
    y = build(b, x)
    outputs = y if isinstance(y, list) else [y]
    b.set_outputs([b.op("quantize", outputs[0], dtype="int8", **SCALE)] + outputs[1:])
    graph = b.build()
    return graph, tabulate(graph, PassContext())


def _ops(graph):
    return [n.op for n in graph.nodes]


def test_silu_with_two_uses_of_its_input_is_one_table():
    graph, tabled = _island(lambda b, x: b.op("mul", x, b.op("sigmoid", x)))
    assert _ops(tabled) == ["lut"]
    q = (np.arange(120) * 2 - 128).astype(np.int8).reshape(2, 3, 4, 5)
    assert np.array_equal(run_int8(graph, q)[graph.outputs[0]],
                          run_int8(tabled, q)[tabled.outputs[0]])


def test_moves_after_the_island_move_the_table_results():
    graph, tabled = _island(lambda b, x: b.op("transpose", b.op("hard_sigmoid", x,
                                                                 alpha=0.2, beta=0.5),
                                              perm=(0, 2, 1, 3)))
    assert _ops(tabled) == ["lut", "transpose"]
    q = np.random.default_rng(0).integers(-128, 128, (2, 3, 4, 5)).astype(np.int8)
    assert np.array_equal(run_int8(graph, q)[graph.outputs[0]],
                          run_int8(tabled, q)[tabled.outputs[0]])


@pytest.mark.parametrize("why, build", [
    ("per-channel constant", lambda b, x: b.op("mul", x, b.add_const(
        "c", np.arange(1, 4, dtype=np.float32).reshape(1, 3, 1, 1)))),
    ("inner value read outside", lambda b, x: [b.op("tanh", s := b.op("sigmoid", x)), s]),
    ("not elementwise", lambda b, x: b.op("softmax", x, axis=-1)),
    ("two int8 sources", lambda b, x: b.op("add", x, b.op("dequantize", b.add_input(
        "r", (2, 3, 4, 5), "int8"), **SCALE))),
])
def test_what_is_not_one_function_of_one_int8_value_stays_float(why, build):
    graph, tabled = _island(build)
    assert "lut" not in _ops(tabled), why
    assert _ops(tabled) == _ops(graph)
