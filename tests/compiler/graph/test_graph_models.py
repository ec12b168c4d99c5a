"""Models built in code: float reference interpreter vs onnxruntime."""
import numpy as np
import pytest

from vtalab.compiler.graph import load_onnx, run

from .conftest import SIZE, ort_run, rand


@pytest.mark.parametrize("fixture,shape", [("resnet_model", (1, 3, SIZE, SIZE)),
                                           ("mobilenet_model", (1, 3, SIZE, SIZE)),
                                           ("mlp_model", (1, 64))])
def test_float_reference_matches_onnxruntime(request, fixture, shape):
    model = request.getfixturevalue(fixture)
    graph = load_onnx(model)
    for seed in range(2):
        x = rand(shape, seed)
        got = run(graph, x)[graph.outputs[0]]
        want = ort_run(model, x, optimize=True)
        err = float(np.abs(got - want).max())
        assert err <= 1e-5 * max(1.0, float(np.abs(want).max())), err


def test_resnet18_full_size_structure():
    from vtalab.compiler.models import resnet18
    graph = load_onnx(resnet18())
    counts = graph.op_counts()
    assert counts["conv2d"] == 20 and counts["batch_norm"] == 20 and counts["dense"] == 1
    assert graph.types["input"].shape == (1, 3, 224, 224)
    assert graph.types[graph.outputs[0]].shape == (1, 1000)
    params = sum(a.size for a in graph.constants.values())
    assert 11.6e6 < params < 11.8e6


def test_mlp_output_is_a_distribution(mlp_model):
    graph = load_onnx(mlp_model)
    probs = run(graph, rand((1, 64)))[graph.outputs[0]]
    assert probs.shape == (1, 10) and abs(float(probs.sum()) - 1) < 1e-5


def test_qdq_model_matches_onnxruntime(qdq_model):
    graph = load_onnx(qdq_model)
    assert {"quantize", "dequantize"} <= set(graph.op_counts())
    for seed in range(2):
        x = rand((1, 3, SIZE, SIZE), seed + 10)
        got = run(graph, x)[graph.outputs[0]]
        want = ort_run(qdq_model, x)
        assert float(np.abs(got - want).max()) <= 1e-5


def test_qoperator_model_matches_onnxruntime(mlp_model, resnet_model):
    pytest.importorskip("onnxruntime.quantization")
    from vtalab.compiler.models import quantize_with_onnxruntime, random_samples
    for model, shape, op in [(mlp_model, (1, 64), "qlinear_matmul"),
                             (resnet_model, (1, 3, SIZE, SIZE), "qlinear_conv")]:
        qop = quantize_with_onnxruntime(model, random_samples(shape, 4), "QOperator",
                                        op_types=["Conv", "MatMul"])
        graph = load_onnx(qop)
        assert op in graph.op_counts()
        x = rand(shape, 3)
        got = run(graph, x)[graph.outputs[0]]
        assert float(np.abs(got - ort_run(qop, x)).max()) <= 1e-5
