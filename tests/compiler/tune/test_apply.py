"""Apply best: compiling with a tuning log uses each task's best record, says once which
tasks have none, records what it used, and computes the same results."""
import warnings

import numpy as np
import pytest

from vtalab.compiler.tune import TuningLog, UntunedWarning, make_record
from vtalab.compiler.tune.extract import tasks_of_model
from vtalab.compiler.tune.templates.accel import CONV2D

from ..exec.conftest import SIZE, samples

pytest.importorskip("onnx", reason="the test model is built with onnx")


@pytest.fixture(scope="module")
def tuned(resnet_model, tmp_path_factory):
    """(tasks, log path, the tuned conv task, its best point, the CPU task and point)."""
    calib = samples((1, 3, SIZE, SIZE))
    tasks = tasks_of_model(resnet_model, "default", calib)
    conv = next(t for t in tasks if t.template == "accel.conv2d" and
                t.args["shape"][5] == 3)
    points = [p for p in CONV2D.space(conv).points() if p != CONV2D.default(conv)]
    best, worse = points[len(points) // 2], points[0]
    cpu = next(t for t in tasks if t.impl.kind == "cpu")
    cpu_point = next(p for p in cpu.impl.space(cpu).points() if p != cpu.impl.default(cpu))
    path = tmp_path_factory.mktemp("log") / "tune.jsonl"
    log = TuningLog(path)
    log.append(make_record(conv, worse, "rtl", 900.0, None))
    log.append(make_record(conv, best, "rtl", 500.0, None))
    log.append(make_record(conv, CONV2D.default(conv), "rtl", 400.0, "wrong result: x"))
    log.append(make_record(cpu, cpu_point, "cpu", 1e-4, None))
    return tasks, path, conv, best, cpu, cpu_point, calib


def test_tasks_of_a_model_are_distinct_and_typed(tuned):
    tasks = tuned[0]
    assert len({t.key for t in tasks}) == len(tasks)
    kinds = {t.template for t in tasks}
    assert {"accel.conv2d", "accel.dense"} <= kinds and any(k.startswith("cpu.") for k in kinds)


def test_compile_uses_the_best_record_and_warns_once_per_untuned_task(resnet_model, tuned):
    from vtalab.compiler.exec import compile_model
    tasks, path, conv, best, cpu, cpu_point, calib = tuned
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        module = compile_model(resnet_model, "default", calibration=calib, tuning_log=path)
    untuned = [w for w in caught if issubclass(w.category, UntunedWarning)]
    assert len(untuned) == len(tasks) - 2                 # once per task, not per layer
    assert len({str(w.message) for w in untuned}) == len(untuned)
    stats = module.stats["tuning"]
    assert stats["used"][conv.key]["cost"] == 500.0 and stats["used"][conv.key]["knobs"] == best
    assert stats["used"][cpu.key]["knobs"] == cpu_point
    assert conv.key not in stats["untuned"] and len(stats["untuned"]) == len(tasks) - 2
    knobs = str(CONV2D.knobs(conv, best))
    assert any(lay.get("knobs") == knobs for lay in module.accel_layers())

    plain = compile_model(resnet_model, "default", calibration=calib)
    x = samples((1, 3, SIZE, SIZE), 1, seed=9)[0]
    got, _ = module.run(x)
    want, _ = plain.run(x)
    for name in want:
        np.testing.assert_array_equal(got[name], want[name])


def test_saved_module_keeps_its_tuning_choices(resnet_model, tuned, tmp_path):
    from vtalab.compiler.exec import compile_model, load_module, save_module
    tasks, path, conv, *_ = tuned[:3] + (None,)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UntunedWarning)
        module = compile_model(resnet_model, "default", calibration=tuned[6], tuning_log=path)
    again = load_module(save_module(module, tmp_path / "m.vtl"))
    assert again.stats["tuning"]["used"] == module.stats["tuning"]["used"]
