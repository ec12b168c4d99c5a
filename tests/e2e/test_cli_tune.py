"""``vtalab tune`` then ``vtalab compile --tuning-log``: tasks extracted from a model, tuned
into a resumable log, applied when compiling."""
import json

import pytest

from vtalab.cli import main

onnx = pytest.importorskip("onnx", reason="the test model is built with onnx")


@pytest.fixture(scope="module")
def mlp_file(tmp_path_factory):
    from vtalab.compiler.models import mlp
    path = tmp_path_factory.mktemp("m") / "mlp.onnx"
    onnx.save(mlp(), str(path))
    return path


def test_tune_then_compile_with_the_log(mlp_file, tmp_path, capsys):
    log = tmp_path / "tune.jsonl"
    args = ["tune", str(mlp_file), "--config", "tiny", "--measure", "model", "--only", "accel",
            "--trials", "3", "--log", str(log)]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "accel.dense" in out
    records = [json.loads(line) for line in log.read_text().splitlines()]
    tasks = {r["task"] for r in records}
    assert len(records) == 3 * len(tasks) and all(r["measure"] == "model" for r in records)
    assert main(args[:-4] + ["--trials", "5", "--log", str(log)]) == 0       # resume: +2 each
    assert len(log.read_text().splitlines()) == 5 * len(tasks)
    capsys.readouterr()
    assert main(["compile", str(mlp_file), "-o", str(tmp_path / "m.vtl"), "--config", "tiny",
                 "--tuning-log", str(log)]) == 0
    out = capsys.readouterr().out
    assert f"{len(tasks)} tasks tuned" in out


def test_tune_rejects_bad_arguments(mlp_file, tmp_path, capsys):
    base = ["tune", str(mlp_file), "--config", "tiny", "--log", str(tmp_path / "t.jsonl")]
    assert main(base + ["--strategy", "genetic"]) == 2
    assert "--strategy must be one of" in capsys.readouterr().err
    assert main(base + ["--trials", "0"]) == 2
    assert "--trials must be at least 1, not 0" in capsys.readouterr().err
