"""Models built in code for the graph and executable-module tests, cached per session."""
import pytest

SIZE = 32  # ResNet-18 / MobileNet input size in tests (224 in real use)


@pytest.fixture(scope="session")
def resnet_model():
    pytest.importorskip("onnx", reason="onnx is needed to build the test models")
    from vtalab.compiler.models import resnet18
    return resnet18(SIZE, num_classes=10)


@pytest.fixture(scope="session")
def mobilenet_model():
    pytest.importorskip("onnx", reason="onnx is needed to build the test models")
    from vtalab.compiler.models import mobilenet
    return mobilenet(SIZE, num_classes=10)


@pytest.fixture(scope="session")
def mlp_model():
    pytest.importorskip("onnx", reason="onnx is needed to build the test models")
    from vtalab.compiler.models import mlp
    return mlp()


@pytest.fixture(scope="session")
def qdq_model(mobilenet_model):
    pytest.importorskip("onnxruntime.quantization")
    from vtalab.compiler.models import quantize_with_onnxruntime, random_samples
    return quantize_with_onnxruntime(mobilenet_model, random_samples((1, 3, SIZE, SIZE), 8))


@pytest.fixture
def define():
    """Register op definitions for one test and remove them afterwards."""
    from vtalab.compiler.graph.opdef import REGISTRY, known_ops, register
    known_ops()                                   # the table is loaded before we add to it
    added = []

    def add(*opdefs):
        register(*opdefs)
        added.extend(d.name for d in opdefs)
    yield add
    for name in added:
        REGISTRY.ops.pop(name)
