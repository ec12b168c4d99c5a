"""passes/stride_fold.py: a convolution of a model input narrower than the GEMM block runs
stride 1 on the input folded space-to-depth, or as a 1x1 over its im2col patches (the
same products, fewer GEMM steps), exact in float and int8; the cheaper rewrite is chosen."""
import numpy as np
import pytest

from vtalab.compiler.graph import GraphBuilder, GraphError, run
from vtalab.compiler.graph.int8_ref import run_int8
from vtalab.compiler.graph.ir import Node, TensorType
from vtalab.compiler.graph.opdefs.data import (infer_patches, infer_stride_fold, ref_patches,
                                               ref_stride_fold)
from vtalab.compiler.graph.passes import PIPELINE, PassContext, compile_graph
from vtalab.compiler.graph.passes import pipeline
from vtalab.compiler.graph.passes.stride_fold import choose_rewrite, stride_fold
from vtalab.spec import preset


def _conv_graph(channels, kernel, stride, pads, out=8, size=(11, 13), seed=0, relu=False):
    rng = np.random.default_rng(seed)
    b = GraphBuilder()
    x = b.add_input("x", (1, channels) + size)
    w = b.add_const("w", rng.integers(-3, 4, (out, channels, kernel, kernel)).astype(np.float32))
    bias = b.add_const("b", rng.integers(-3, 4, out).astype(np.float32))
    y = b.op("conv2d", x, w, bias, strides=(stride, stride), pads=pads)
    b.set_outputs([b.op("relu", y) if relu else y])
    return b.build()


def test_stride_fold_is_space_to_depth_of_the_padded_input():
    x = np.arange(2 * 3 * 5 * 7, dtype=np.float32).reshape(2, 3, 5, 7)
    node = Node("f", "stride_fold", ("x",), ("y",), {"block": 2, "pads": (1, 2), "size": (3, 4)})
    y = ref_stride_fold(node, x)
    padded = np.zeros((2, 3, 6, 8), np.float32)
    padded[:, :, 1:6, 2:8] = x[:, :, :, :6]          # cropped at 8 columns
    assert y.shape == infer_stride_fold(node, [TensorType(x.shape, "float32")])[0].shape \
        == (2, 12, 3, 4)
    for c in range(3):
        for p in range(2):
            for q in range(2):
                assert np.array_equal(y[:, (c * 2 + p) * 2 + q], padded[:, c, p::2, q::2])


@pytest.mark.parametrize("attr, value", [("block", 1), ("block", 2.0), ("pads", (1,)),
                                         ("pads", (0, -1)), ("size", (0, 3))])
def test_stride_fold_refuses_bad_attributes_naming_them(attr, value):
    attrs = {"block": 2, "pads": (0, 0), "size": (2, 2), attr: value}
    node = Node("f", "stride_fold", ("x",), ("y",), attrs)
    with pytest.raises(GraphError, match=f"{attr} of stride_fold node 'f' must be"):
        infer_stride_fold(node, [TensorType((1, 3, 4, 5), "float32")])


@pytest.mark.parametrize("channels, kernel, stride, pads, size", [
    (3, 7, 2, (3, 3, 3, 3), (32, 32)),      # ResNet's stem
    (3, 3, 2, (1, 1, 1, 1), (11, 13)),      # MobileNet's
    (3, 3, 2, (0, 1, 1, 0), (12, 9)),       # asymmetric pads
    (2, 5, 3, (2, 2, 2, 2), (17, 16)),      # kernel not a multiple of the stride
    (1, 4, 4, (0, 0, 0, 0), (16, 12)),      # patches (ViT-style)
])
def test_the_folded_convolution_computes_the_same_values(channels, kernel, stride, pads, size):
    graph = _conv_graph(channels, kernel, stride, pads, size=size)
    folded = stride_fold(graph, PassContext())
    counts = folded.op_counts()
    assert counts["stride_fold"] == 1 and counts["conv2d"] == 1
    conv = next(n for n in folded.nodes if n.op == "conv2d")
    assert conv.attr("strides") == (1, 1) and conv.attr("pads") == (0, 0, 0, 0)
    x = np.random.default_rng(1).integers(-8, 9, (1, channels) + size).astype(np.float32)
    assert np.array_equal(run(folded, x)[folded.outputs[0]],   # small integers: exact sums
                          run(graph, x)[graph.outputs[0]])


def test_convolutions_without_a_saving_or_not_on_an_input_are_kept():
    kept = [_conv_graph(16, 3, 2, (1, 1, 1, 1)),            # a full block
            _conv_graph(3, 1, 2, (0, 0, 0, 0))]             # 1x1: 4 steps vs 1
    b = GraphBuilder()                                      # mid-network
    x = b.add_input("x", (1, 3, 8, 8))
    w = b.add_const("w", np.ones((8, 3, 3, 3), np.float32))
    b.set_outputs([b.op("conv2d", b.op("relu", x), w, strides=(2, 2), pads=(1, 1, 1, 1))])
    for graph in kept + [b.build()]:
        counts = stride_fold(graph, PassContext()).op_counts()
        assert "stride_fold" not in counts and "patches" not in counts


def test_patches_are_the_windows_of_the_padded_input_as_channels():
    x = np.arange(2 * 3 * 6 * 7, dtype=np.float32).reshape(2, 3, 6, 7)
    node = Node("p", "patches", ("x",), ("y",),
                {"kernel": 3, "stride": 2, "pads": (1, 0), "size": (3, 3)})
    y = ref_patches(node, x)
    assert y.shape == infer_patches(node, [TensorType(x.shape, "float32")])[0].shape \
        == (2, 27, 3, 3)
    padded = np.zeros((2, 3, 7, 7), np.float32)
    padded[:, :, 1:7] = x
    for c in range(3):
        for a in range(3):
            for b in range(3):
                assert np.array_equal(y[:, (c * 3 + a) * 3 + b],
                                      padded[:, c, a:a + 5:2, b:b + 5:2])


@pytest.mark.parametrize("attr, value", [("kernel", 0), ("stride", 1.5), ("pads", (1, 2, 3)),
                                         ("size", (2,))])
def test_patches_refuse_bad_attributes_naming_them(attr, value):
    attrs = {"kernel": 3, "stride": 1, "pads": (0, 0), "size": (2, 2), attr: value}
    node = Node("p", "patches", ("x",), ("y",), attrs)
    with pytest.raises(GraphError, match=f"{attr} of patches node 'p' must be"):
        infer_patches(node, [TensorType((1, 3, 4, 5), "float32")])


@pytest.mark.parametrize("filters, channels, kernel, stride, way", [
    (64, 3, 7, 2, "patches"),   # ResNet's stem: 10 steps x 4 filter blocks, not 16 x 4
    (16, 3, 7, 2, "fold"),      # one filter block: loading 10 patch entries (20 cycles) > 16
    (32, 3, 3, 1, "patches"),   # 27 channels: 2 steps, not 9
    (64, 16, 3, 2, None),       # a full block: nothing to gain
    (64, 3, 1, 2, None),        # 1x1 strided: folding quadruples the steps
])
def test_the_cheaper_rewrite_is_chosen(filters, channels, kernel, stride, way):
    assert choose_rewrite(preset("default"), filters, channels, kernel, stride) == way


@pytest.mark.parametrize("channels, kernel, stride, pads, size", [
    (3, 7, 2, (3, 3, 3, 3), (32, 32)),      # ResNet's stem
    (3, 3, 1, (1, 1, 1, 1), (11, 13)),      # stride 1
    (2, 5, 3, (2, 1, 0, 2), (17, 16)),      # asymmetric pads, kernel not a multiple
])
def test_the_patched_convolution_computes_the_same_values(channels, kernel, stride, pads,
                                                          size):
    graph = _conv_graph(channels, kernel, stride, pads, out=64, size=size)
    patched = stride_fold(graph, PassContext())
    counts = patched.op_counts()
    assert counts["patches"] == 1 and counts["conv2d"] == 1
    conv = next(n for n in patched.nodes if n.op == "conv2d")
    assert conv.attr("strides") == (1, 1) and patched.constants[conv.inputs[1]].shape == \
        (64, channels * kernel * kernel, 1, 1)
    x = np.random.default_rng(2).integers(-8, 9, (1, channels) + size).astype(np.float32)
    assert np.array_equal(run(patched, x)[patched.outputs[0]], run(graph, x)[graph.outputs[0]])


@pytest.mark.parametrize("filters, weight_shape", [
    (16, (1, 4, 4)),        # folded: 12 channels in 1 block, a 4x4 kernel
    (64, (10, 1, 1)),       # patches: 147 channels in 10 blocks, a 1x1 kernel
])
def test_the_stem_runs_on_the_accelerator_in_fewer_steps_with_the_same_int8_values(
        monkeypatch, filters, weight_shape):
    graph = _conv_graph(3, 7, 2, (3, 3, 3, 3), out=filters, size=(32, 32), relu=True)
    calibration = np.random.default_rng(3).normal(size=(4, 1, 3, 32, 32)).astype(np.float32)
    final = compile_graph(graph, "default", calibration=calibration)
    accel = next(n for n in final.nodes if n.attr("target") == "accel")
    assert final.constants[accel.inputs[1]].shape[1:4] == weight_shape
    monkeypatch.setattr(pipeline, "PIPELINE",
                        tuple(p for p in PIPELINE if p[0] != "stride_fold"))
    plain = compile_graph(graph, "default", calibration=calibration)
    assert "stride_fold" not in plain.op_counts() and "patches" not in plain.op_counts()
    for seed in range(3):
        x = np.random.default_rng(seed).normal(size=(1, 3, 32, 32)).astype(np.float32)
        assert np.array_equal(run_int8(final, x)[final.outputs[0]],
                              run_int8(plain, x)[plain.outputs[0]])
