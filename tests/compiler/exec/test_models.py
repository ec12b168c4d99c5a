"""Whole models through the executable module: bit-exact against the int8 reference on the
functional simulator, float path against onnxruntime, two presets, partition reports."""
import numpy as np
import pytest

from vtalab.compiler.exec import compile_model
from vtalab.compiler.graph import run_int8

from .conftest import SIZE, values_differ, samples

IMAGE = (1, 3, SIZE, SIZE)


def _check_int8(module, shape, seed=7):
    x = samples(shape, 1, seed)[0]
    outputs, profile = module.run(x, keep=True)
    reference = run_int8(module.graph, x, keep_all=True)
    assert values_differ(outputs, reference) == []
    out = module.outputs[0]
    return outputs[out], reference[out], profile


def test_resnet18_bit_exact_on_fsim(resnet_module):
    got, want, profile = _check_int8(resnet_module, IMAGE)
    assert np.array_equal(got, want)
    layers = resnet_module.accel_layers()
    assert len(layers) == 21 and sum(lay["op"] == "accel_conv2d" for lay in layers) == 20
    assert all(s.op != "accel_conv2d" for s in resnet_module.steps if s.target == "cpu")
    totals = profile.totals()
    assert totals["accel_steps"] == sum(s.target == "accel" for s in resnet_module.steps)
    assert totals["accel_macs"] == sum(lay["macs"] for lay in layers) > 0
    # the model's MACs on the accelerator: the residuals' identity GEMMs are array work on
    # top (counted apart), so the offloaded share can never exceed the model
    assert totals["accel_macs"] <= totals["macs"] < totals["array_macs"]
    assert "accel" in profile.table()


@pytest.mark.parametrize("per_channel", [False, True])
def test_mobilenet_bit_exact(mobilenet_model, per_channel):
    module = compile_model(mobilenet_model, "default", calibration=samples(IMAGE),
                           per_channel=per_channel)
    got, want, _ = _check_int8(module, IMAGE)
    assert np.array_equal(got, want)
    placed = {s.op: s.target for s in module.steps}
    assert placed["accel_conv2d"] == "accel" and placed["qconv2d"] == "cpu"  # depthwise


def test_mlp_int8_matches_and_softmax_within_rounding(mlp_model):
    module = compile_model(mlp_model, "default", calibration=samples((1, 64)))
    got, want, _ = _check_int8(module, (1, 64))
    assert np.abs(got - want).max() <= 1e-6
    assert sum(lay["op"] == "accel_dense" for lay in module.accel_layers()) == 3


def test_qdq_model_bit_exact(qdq_model):
    module = compile_model(qdq_model, "default")
    got, want, _ = _check_int8(module, IMAGE)
    assert np.array_equal(got, want)
    assert any(s.target == "accel" for s in module.steps)


@pytest.mark.parametrize("fixture,shape", [("resnet_model", IMAGE), ("mobilenet_model", IMAGE),
                                           ("mlp_model", (1, 64))])
def test_float_path_matches_onnxruntime(request, fixture, shape):
    ort = pytest.importorskip("onnxruntime")
    model = request.getfixturevalue(fixture)
    module = compile_model(model, "default", quantize=False)
    assert all(s.target == "cpu" for s in module.steps)
    session = ort.InferenceSession(model.SerializeToString(),
                                   providers=["CPUExecutionProvider"])
    for seed in range(2):
        x = samples(shape, 1, seed + 20)[0]
        got = module.run(x)[0][module.outputs[0]]
        want = session.run(None, {session.get_inputs()[0].name: x})[0]
        assert np.abs(got - want).max() <= 1e-5 * max(1.0, float(np.abs(want).max()))


def test_resnet18_on_block8_without_code_changes(resnet_model):
    module = compile_model(resnet_model, "block8", calibration=samples(IMAGE))
    assert module.cfg.block_in == 8
    got, want, _ = _check_int8(module, IMAGE, seed=3)
    assert np.array_equal(got, want)
    assert len(module.accel_layers()) == 21


def test_partition_report_names_every_node(resnet_module, mobilenet_model):
    report = resnet_module.report
    assert "partition of resnet18" in report and "DRAM footprint" in report
    assert "max_pool: no accelerator template" in report
    mobile = compile_model(mobilenet_model, "default", calibration=samples(IMAGE))
    assert "grouped conv2d" in mobile.report
