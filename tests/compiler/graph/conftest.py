"""Fixtures of the graph-level tests: models built in code, cached per session."""
import numpy as np
import pytest

pytest.importorskip("onnx", reason="onnx is needed to build and import the test models")

SIZE = 32  # ResNet-18 / MobileNet input size in tests (224 in real use)


def rand(shape, seed=0):
    return np.random.default_rng(seed).normal(0, 1, shape).astype(np.float32)


def cosine(a, b) -> float:
    a, b = np.ravel(a).astype(np.float64), np.ravel(b).astype(np.float64)
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


def ort_run(model, x, optimize=False):
    ort = pytest.importorskip("onnxruntime", reason="onnxruntime is the float reference")
    options = ort.SessionOptions()
    if not optimize:
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    session = ort.InferenceSession(model.SerializeToString(), options,
                                   providers=["CPUExecutionProvider"])
    feeds = x if isinstance(x, dict) else {session.get_inputs()[0].name: x}
    return session.run(None, feeds)[0]


@pytest.fixture(scope="session")
def resnet_model():
    from vtalab.compiler.models import resnet18
    return resnet18(SIZE, num_classes=10)


@pytest.fixture(scope="session")
def mobilenet_model():
    from vtalab.compiler.models import mobilenet
    return mobilenet(SIZE, num_classes=10)


@pytest.fixture(scope="session")
def mlp_model():
    from vtalab.compiler.models import mlp
    return mlp()


@pytest.fixture(scope="session")
def qdq_model(mobilenet_model):
    pytest.importorskip("onnxruntime.quantization")
    from vtalab.compiler.models import quantize_with_onnxruntime, random_samples
    return quantize_with_onnxruntime(mobilenet_model, random_samples((1, 3, SIZE, SIZE), 8))
