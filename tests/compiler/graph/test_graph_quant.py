"""int8 quantisation: integer semantics, accuracy against the float models, clear errors."""
import numpy as np
import pytest

from vtalab.compiler.graph import GraphBuilder, QuantizeError, load_onnx, run
from vtalab.compiler.graph.int8_ref import run_int8, shift_right
from vtalab.compiler.graph.passes import compile_graph

from .conftest import SIZE, cosine, rand

IMAGE = (1, 3, SIZE, SIZE)


def test_shift_right_semantics():
    x = np.array([-5, 5, -1, 7, 1 << 30], np.int32)
    assert list(shift_right(x, 1)) == [-3, 2, -1, 3, 1 << 29]       # floor, arithmetic
    assert list(shift_right(x, -2)) == [-20, 20, -4, 28, 0]         # left, wrapping
    per_lane = shift_right(np.array([[64, 64]], np.int32), np.array([[3, -1]]))
    assert per_lane.tolist() == [[8, 128]]
    assert np.array_equal(shift_right(shift_right(x, 9), 13), shift_right(x, 22))


def test_fused_operator_matches_step_by_step_integer_math():
    rng = np.random.default_rng(0)
    x = rng.integers(-128, 128, (1, 16, 5, 5)).astype(np.int8)
    w = rng.integers(-128, 128, (16, 16, 3, 3)).astype(np.int8)
    bias = rng.integers(-4000, 4000, (1, 16, 1, 1)).astype(np.int32)
    res = rng.integers(-128, 128, (1, 16, 5, 5)).astype(np.int8)
    b = GraphBuilder()
    xi, ri = b.add_input("x", x.shape, "int8"), b.add_input("r", res.shape, "int8")
    out = b.op("accel_conv2d", xi, b.add_const("w", w), b.add_const("b", bias), ri,
               pads=(1, 1, 1, 1), residual_shr=-4, shift=9, lo=0, hi=100, out_dtype="int8")
    b.set_outputs([out])
    got = run_int8(b.build(), {"x": x, "r": res})[out]
    acc = np.zeros((1, 16, 5, 5), np.int64)
    xp = np.pad(x.astype(np.int64), ((0, 0), (0, 0), (1, 1), (1, 1)))
    for i in range(5):
        for j in range(5):
            acc[0, :, i, j] = np.einsum("cij,ocij->o", xp[0, :, i:i + 3, j:j + 3], w)
    expect = np.clip((acc + bias + (res.astype(np.int64) << 4)) >> 9, 0, 100)
    assert np.array_equal(got, expect.astype(np.int8))


def _accuracy(model, shape, inputs, calib, **options):
    graph = load_onnx(model)
    final = compile_graph(graph, calibration=calib, **options)
    cos, agree = [], 0
    for x in inputs:
        yf = run(graph, x)[graph.outputs[0]]
        yq = run_int8(final, x)[final.outputs[0]]
        cos += [cosine(a, b) for a, b in zip(yf, yq)]  # per sample
        agree += int(np.sum(yf.argmax(-1) == yq.argmax(-1)))
    return float(np.mean(cos)), float(np.min(cos)), agree


def test_resnet18_int8_cosine_and_top1():
    """100 random inputs (4 batches of 25) on ResNet-18 at 32x32, per-tensor weights."""
    from vtalab.compiler.models import resnet18
    model = resnet18(SIZE, num_classes=10, batch=25)
    calib = [rand((25, 3, SIZE, SIZE), 100)]
    inputs = [rand((25, 3, SIZE, SIZE), seed) for seed in range(4)]
    mean, low, agree = _accuracy(model, None, inputs, calib)
    assert agree <= 100
    print(f"resnet18 int8 vs float: cosine mean {mean:.4f} min {low:.4f}, "
          f"top-1 agreement {agree}/100")
    assert mean >= 0.99 and low >= 0.97
    assert agree >= 70


@pytest.mark.parametrize("fixture,shape,per_channel", [
    ("resnet_model", IMAGE, True), ("mobilenet_model", IMAGE, False),
    ("mobilenet_model", IMAGE, True), ("mlp_model", (1, 64), False)])
def test_int8_cosine_on_models(request, fixture, shape, per_channel):
    model = request.getfixturevalue(fixture)
    calib = rand((8,) + shape, 50)
    inputs = [rand(shape, seed) for seed in range(5)]
    mean, low, agree = _accuracy(model, shape, inputs, calib, per_channel=per_channel)
    print(f"{fixture} per_channel={per_channel}: cosine mean {mean:.4f} min {low:.4f}, "
          f"top-1 {agree}/5")
    assert mean >= 0.99 and low >= 0.98


def test_quantise_from_qdq_scales_without_calibration(qdq_model, mobilenet_model):
    graph = load_onnx(qdq_model)
    final = compile_graph(graph)   # no calibration set: the model's own scales
    assert final.meta["activation_ranges"]
    assert final.op_counts()["accel_conv2d"] == 7
    float_graph = load_onnx(mobilenet_model)
    for seed in range(3):
        x = rand(IMAGE, seed + 20)
        yq = run_int8(final, x)[final.outputs[0]]
        assert cosine(run(float_graph, x)[float_graph.outputs[0]], yq) >= 0.99


def test_calibration_errors(mlp_model):
    graph = load_onnx(mlp_model)
    with pytest.raises(QuantizeError, match=r"calibration set for input 'input' must be "
                                            r"shaped \(1, 64\) or \[samples, \*\(1, 64\)\], "
                                            r"not \(1, 32\)"):
        compile_graph(graph, calibration=rand((1, 32)))
    with pytest.raises(QuantizeError, match="calibration sample 1 for input 'input' must be "
                                            r"float32\[1x64\], not float32\[64\]"):
        compile_graph(graph, calibration=[rand((1, 64)), rand((64,))])
    with pytest.raises(QuantizeError, match="at least one sample"):
        compile_graph(graph, calibration=[])
    with pytest.raises(QuantizeError, match="calibration set must be given"):
        compile_graph(graph)


def test_int8_max_pool_matches_float_pool_on_integers():
    from vtalab.compiler.graph.kernels import max_pool
    x = np.random.default_rng(3).integers(-128, 128, (1, 2, 7, 7)).astype(np.int8)
    for ceil_mode in (0, 1):
        b = GraphBuilder()
        out = b.op("max_pool", b.add_input("x", x.shape, "int8"), kernel=(3, 3),
                   strides=(2, 2), pads=(0, 0, 1, 1), ceil_mode=ceil_mode)
        b.set_outputs([out])
        got = run_int8(b.build(), x)[out]
        want = max_pool(x.astype(np.float32), (3, 3), (2, 2), (0, 0, 1, 1), (1, 1), ceil_mode)
        assert got.dtype == np.int8 and np.array_equal(got, want.astype(np.int8))


def test_quantise_qoperator_model_from_its_scales(resnet_model):
    """QLinearConv models: lowered to QDQ form, re-quantised for the accelerator; the layer
    onnxruntime left in float (Gemm, and the last conv without an output scale) stays float."""
    pytest.importorskip("onnxruntime.quantization")
    from vtalab.compiler.models import quantize_with_onnxruntime, random_samples
    qop = quantize_with_onnxruntime(resnet_model, random_samples(IMAGE, 8), "QOperator",
                                    op_types=["Conv", "MatMul"])
    final = compile_graph(load_onnx(qop))
    counts = final.op_counts()
    assert counts["accel_conv2d"] == 19 and counts["dense"] == 1
    float_graph = load_onnx(resnet_model)
    for seed in range(2):
        x = rand(IMAGE, seed + 40)
        yq = run_int8(final, x)[final.outputs[0]]
        assert cosine(run(float_graph, x)[float_graph.outputs[0]], yq) >= 0.99
