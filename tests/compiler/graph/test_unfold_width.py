"""passes/unfold_width.py: a convolution narrower than the GEMM block takes its kernel
columns as input channels (the same products, fewer GEMM steps), exact in float and int8."""
import numpy as np
import pytest

from vtalab.compiler.graph import GraphBuilder, GraphError, run
from vtalab.compiler.graph.int8_ref import run_int8
from vtalab.compiler.graph.ir import Node, TensorType
from vtalab.compiler.graph.opdefs.data import infer_unfold_width, ref_unfold_width
from vtalab.compiler.graph.passes import PIPELINE, PassContext, compile_graph
from vtalab.compiler.graph.passes import pipeline
from vtalab.compiler.graph.passes.unfold_width import unfold_width
from vtalab.spec.config import preset


def _conv_graph(channels, kernel, strides, pads, out=8, size=(11, 13), seed=0):
    rng = np.random.default_rng(seed)
    b = GraphBuilder()
    x = b.add_input("x", (1, channels) + size)
    w = b.add_const("w", rng.integers(-3, 4, (out, channels) + kernel).astype(np.float32))
    bias = b.add_const("b", rng.integers(-3, 4, out).astype(np.float32))
    b.set_outputs([b.op("conv2d", x, w, bias, strides=strides, pads=pads)])
    return b.build()


def _integer_input(graph, seed=1):
    shape = graph.types[graph.inputs[0]].shape
    return np.random.default_rng(seed).integers(-8, 9, shape).astype(np.float32)


def test_unfold_width_is_each_columns_window_as_channels():
    x = np.arange(2 * 3 * 2 * 7, dtype=np.float32).reshape(2, 3, 2, 7)
    node = Node("u", "unfold_width", ("x",), ("y",), {"kernel": 3, "stride": 2, "pads": (1, 2)})
    y = ref_unfold_width(node, x)
    padded = np.pad(x, ((0, 0), (0, 0), (0, 0), (1, 2)))
    assert y.shape == infer_unfold_width(node, [TensorType(x.shape, "float32")])[0].shape == (2, 9, 2, 4)
    for j in range(3):
        for c in range(3):
            for v in range(4):
                assert np.array_equal(y[:, j * 3 + c, :, v], padded[:, c, :, 2 * v + j])


@pytest.mark.parametrize("attr, value, field", [("kernel", 0, "kernel"), ("stride", 1.5, "stride"),
                                               ("pads", (1,), "pads"), ("pads", (0, -1), "pads")])
def test_unfold_width_refuses_bad_attributes_naming_them(attr, value, field):
    attrs = {"kernel": 3, "stride": 1, "pads": (0, 0), attr: value}
    node = Node("u", "unfold_width", ("x",), ("y",), attrs)
    with pytest.raises(GraphError, match=f"{field} of unfold_width node 'u' must be"):
        infer_unfold_width(node, [TensorType((1, 3, 4, 5), "float32")])


@pytest.mark.parametrize("channels, kernel, strides, pads", [
    (3, (7, 7), (2, 2), (3, 3, 3, 3)),      # ResNet's stem
    (3, (3, 3), (1, 1), (1, 1, 1, 1)),
    (5, (3, 4), (1, 3), (0, 2, 1, 1)),      # asymmetric pads, stride wider than the kernel
    (1, (1, 5), (2, 1), (0, 0, 0, 0)),
])
def test_the_unfolded_convolution_computes_the_same_values(channels, kernel, strides, pads):
    graph = _conv_graph(channels, kernel, strides, pads)
    rewritten = unfold_width(graph, PassContext(config=preset("default")))
    counts = rewritten.op_counts()
    assert counts["unfold_width"] == 1 and counts["conv2d"] == 1
    conv = next(n for n in rewritten.nodes if n.op == "conv2d")
    assert rewritten.constants[conv.inputs[1]].shape[2:] == (kernel[0], 1)
    x = _integer_input(graph)      # small integers: every float sum is exact
    assert np.array_equal(run(rewritten, x)[rewritten.outputs[0]],
                          run(graph, x)[graph.outputs[0]])


@pytest.mark.parametrize("channels, kernel, groups", [
    (16, (3, 3), 1),      # a full block: no step saved
    (3, (3, 1), 1),       # one column
    (4, (3, 3), 2),       # grouped
])
def test_convolutions_without_a_saving_are_kept(channels, kernel, groups):
    rng = np.random.default_rng(0)
    b = GraphBuilder()
    x = b.add_input("x", (1, channels, 8, 8))
    w = b.add_const("w", rng.normal(size=(8, channels // groups) + kernel).astype(np.float32))
    b.set_outputs([b.op("conv2d", x, w, groups=groups, pads=(1, 0, 1, 0))])
    graph = b.build()
    assert "unfold_width" not in unfold_width(graph, PassContext()).op_counts()


def test_the_stem_compiles_to_fewer_gemm_steps_and_the_same_int8_values(monkeypatch):
    graph = _conv_graph(3, (7, 7), (2, 2), (3, 3, 3, 3), out=16, size=(32, 32))
    rng = np.random.default_rng(3)
    calibration = rng.normal(size=(4, 1, 3, 32, 32)).astype(np.float32)
    final = compile_graph(graph, "default", calibration=calibration)
    assert "unfold_width" in final.op_counts()
    accel = next(n for n in final.nodes if n.attr("target") == "accel")
    assert final.constants[accel.inputs[1]].shape[1:4] == (2, 7, 1)  # ceil(21/16) blocks, 7x1
    monkeypatch.setattr(pipeline, "PIPELINE",
                        tuple(p for p in PIPELINE if p[0] != "unfold_width"))
    folded = compile_graph(graph, "default", calibration=calibration)
    assert "unfold_width" not in folded.op_counts()
    for seed in range(3):
        x = np.random.default_rng(seed).normal(size=(1, 3, 32, 32)).astype(np.float32)
        assert np.array_equal(run_int8(final, x)[final.outputs[0]],
                              run_int8(folded, x)[folded.outputs[0]])
