"""`vtalab compile` / `vtalab run` / `vtalab demo` on models built in code, and bad inputs:
each a clear error with exit code 2."""
import subprocess
import sys

import numpy as np
import pytest

from vtalab.cli import main

onnx = pytest.importorskip("onnx", reason="the model commands need onnx")


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    from vtalab.compiler.models import mlp, resnet18
    root = tmp_path_factory.mktemp("models")
    onnx.save(resnet18(32, num_classes=10), root / "resnet.onnx")
    onnx.save(mlp(), root / "mlp.onnx")
    rng = np.random.default_rng(0)
    np.save(root / "x.npy", rng.normal(0, 1, (1, 3, 32, 32)).astype(np.float32))
    np.save(root / "cal.npy", rng.normal(0, 1, (4, 1, 3, 32, 32)).astype(np.float32))
    np.save(root / "x_mlp.npy", rng.normal(0, 1, (1, 64)).astype(np.float32))
    return root


def test_compile_then_run_module_file(files, capsys):
    vtl = files / "resnet.vtl"
    assert main(["compile", str(files / "resnet.onnx"), "-o", str(vtl),
                 "--calibrate", str(files / "cal.npy")]) == 0
    out = capsys.readouterr().out
    assert "partition of resnet18" in out and "accel_conv2d" in out and vtl.exists()
    y = files / "y.npy"
    assert main(["run", str(vtl), "--input", str(files / "x.npy"), "--output", str(y),
                 "-q"]) == 0
    out = capsys.readouterr().out
    assert "accel" in out and "on fsim" in out and "MACs" in out
    assert np.load(y).shape == (1, 10)


def test_run_onnx_directly_matches_compiled_module(files, capsys):
    y1, y2 = files / "m1.npy", files / "m2.npy"
    assert main(["run", str(files / "mlp.onnx"), "--input", str(files / "x_mlp.npy"),
                 "--output", str(y1), "-q"]) == 0
    assert "calibrating on 8 seeded random" in capsys.readouterr().out
    assert main(["compile", str(files / "mlp.onnx"), "-o", str(files / "mlp.vtl")]) == 0
    assert main(["run", str(files / "mlp.vtl"), "--input", str(files / "x_mlp.npy"),
                 "--output", str(y2), "-q"]) == 0
    assert np.array_equal(np.load(y1), np.load(y2))


def _model(nodes, inputs, outputs, inits=()):
    h = onnx.helper
    graph = h.make_graph(nodes, "bad", inputs, outputs, list(inits))
    model = h.make_model(graph, opset_imports=[h.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def _float(name, shape):
    return onnx.helper.make_tensor_value_info(name, onnx.TensorProto.FLOAT, shape)


def _expect_error(capsys, argv, *fragments):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "error:" in err
    for fragment in fragments:
        assert fragment in err, err


def test_truncated_onnx(files, tmp_path, capsys):
    cut = tmp_path / "cut.onnx"
    cut.write_bytes((files / "resnet.onnx").read_bytes()[:5000])
    _expect_error(capsys, ["compile", str(cut), "-o", str(tmp_path / "c.vtl")], "cut.onnx")
    assert not (tmp_path / "c.vtl").exists()


def test_dynamic_dimension(tmp_path, capsys):
    path = tmp_path / "dyn.onnx"
    onnx.save(_model([onnx.helper.make_node("Relu", ["x"], ["y"])], [_float("x", ["N", 8])],
                     [_float("y", ["N", 8])]), path)
    _expect_error(capsys, ["compile", str(path), "-o", str(tmp_path / "d.vtl")], "'x'")


def test_unsupported_op(tmp_path, capsys):
    path = tmp_path / "det.onnx"
    onnx.save(_model([onnx.helper.make_node("Det", ["x"], ["y"], name="my_det")],
                     [_float("x", [2, 2])], [_float("y", [])]), path)
    _expect_error(capsys, ["compile", str(path), "-o", str(tmp_path / "e.vtl")],
                  "my_det", "Det")


def test_calibration_of_the_wrong_shape(files, tmp_path, capsys):
    bad = tmp_path / "bad_cal.npy"
    np.save(bad, np.zeros((4, 1, 3, 16, 16), np.float32))
    _expect_error(capsys, ["compile", str(files / "resnet.onnx"), "-o",
                           str(tmp_path / "r.vtl"), "--calibrate", str(bad)],
                  "calibration data must be shaped (1, 3, 32, 32)")


def test_input_of_the_wrong_shape_and_missing_files(files, tmp_path, capsys):
    bad = tmp_path / "x_bad.npy"
    np.save(bad, np.zeros((1, 32), np.float32))
    _expect_error(capsys, ["run", str(files / "mlp.onnx"), "--input", str(bad), "-q"],
                  "input 'input' must be float32[1x64]")
    _expect_error(capsys, ["run", str(files / "mlp.onnx"), "--input",
                           str(tmp_path / "none.npy")], "must be an existing .npy file")
    _expect_error(capsys, ["run", str(tmp_path / "none.vtl"), "--input",
                           str(files / "x_mlp.npy")], "must exist")


def test_resnet_demo_in_a_fresh_process():
    done = subprocess.run([sys.executable, "-m", "vtalab", "demo", "--input-size", "32"],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "matches the int8 reference bit for bit" in done.stdout
    assert "cosine similarity" in done.stdout and "top-1" in done.stdout
