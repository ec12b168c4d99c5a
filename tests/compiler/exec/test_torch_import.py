"""PyTorch import: torchvision's architectures (written with torch.nn, random weights)
exported through torch.onnx and compiled: float path against torch, int8 path bit-exact on
the functional simulator against the int8 reference and close to torch; `vtalab compile
model.pt`."""
import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="PyTorch import needs the [torch] extra")

from vtalab.cli import main  # noqa: E402
from vtalab.compiler.graph import run_int8  # noqa: E402
from vtalab.compiler.graph.errors import ModelError  # noqa: E402
from vtalab.compiler.models import torch_cnn, torch_vit  # noqa: E402
from vtalab.compiler.torch_import import compile_torch, export_onnx, load_torch  # noqa: E402

from .conftest import values_differ, samples  # noqa: E402

SIZE = 32
MODELS = {
    "mobilenet_v3_small": lambda: torch_cnn.build("mobilenet_v3_small", num_classes=10),
    "shufflenet_v2_x1_0": lambda: torch_cnn.build("shufflenet_v2_x1_0", num_classes=10),
    "vit": lambda: torch_vit.vit(2, image=SIZE, dim=64, heads=4, mlp=128, num_classes=10),
}


def _cosine(a, b) -> float:
    a, b = np.ravel(a).astype(np.float64), np.ravel(b).astype(np.float64)
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


def _torch_out(model, x):
    with torch.no_grad():
        return model(torch.from_numpy(x)).numpy()


@pytest.mark.parametrize("name", sorted(MODELS))
def test_float_path_matches_torch(name):
    model = MODELS[name]()
    x = samples((1, 3, SIZE, SIZE), 1, 5)[0]
    module = compile_torch(model, (x,), quantize=False)
    got = module.run(x)[0][module.outputs[0]]
    want = _torch_out(model, x)
    assert np.abs(got - want).max() <= 1e-4 * max(1.0, float(np.abs(want).max()))


@pytest.mark.parametrize("name", sorted(MODELS))
def test_int8_path_bit_exact_and_close_to_torch(name):
    model = MODELS[name]()
    shape = (1, 3, SIZE, SIZE)
    module = compile_torch(model, samples(shape, 1, 6), calibration=samples(shape, 8, 7))
    assert any(s.target == "accel" for s in module.steps)
    x = samples(shape, 1, 8)[0]
    outputs, _ = module.run(x, keep=True)
    reference = run_int8(module.graph, x, keep_all=True)
    assert values_differ(outputs, reference) == []
    out = module.outputs[0]
    assert np.array_equal(outputs[out], reference[out])
    assert _cosine(outputs[out], _torch_out(model, x)) >= 0.98


def test_export_at_the_newest_opset_the_exporter_takes():
    model = MODELS["mobilenet_v3_small"]()
    x = samples((1, 3, SIZE, SIZE), 1, 9)[0]
    for opset in (17, 22):
        graph = load_torch(model, (x,), opset)
        assert {"hard_swish", "hard_sigmoid"} <= {n.op for n in graph.nodes}
    with pytest.raises(ModelError, match="must export to ONNX at opset 99"):
        export_onnx(model, (x,), 99)


def test_cli_compiles_a_torchscript_file(tmp_path, capsys):
    model = MODELS["shufflenet_v2_x1_0"]()
    path = tmp_path / "shufflenet.pt"
    torch.jit.save(torch.jit.trace(model, torch.randn(1, 3, SIZE, SIZE)), str(path))
    out = tmp_path / "s.vtl"
    assert main(["compile", str(path), "-o", str(out), "--input-shape", f"1,3,{SIZE},{SIZE}",
                 "--float"]) == 0
    assert out.is_file()
    assert main(["compile", str(path), "-o", str(out)]) == 2
    assert "--input-shape must be given" in capsys.readouterr().err
