"""The tuning log: one JSON record per line, atomic appends, a process killed mid-append
loses nothing that was written and duplicates nothing on resume."""
import json
import os
import subprocess
import sys
import textwrap

import pytest

from vtalab.compiler.errors import CompileError
from vtalab.compiler.tune import TuningLog, make_record, tune_task
from vtalab.compiler.tune.space import point_key

from .synthetic import synthetic_task

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(__file__))))


def _record(task, tile, cost, error=None):
    return make_record(task, {"tile": [256 // tile, tile], "lanes": 8, "unroll": True},
                       "synthetic", cost, error)


def test_append_find_best_and_dedupe(tmp_path):
    task = synthetic_task()
    log = TuningLog(tmp_path / "t.jsonl")
    assert log.append(_record(task, 4, 300.0))
    assert log.append(_record(task, 8, 100.0))
    assert log.append(_record(task, 16, None, "wrong result: 3 of 9 outputs differ"))
    assert not log.append(_record(task, 8, 90.0))          # same point: refused
    again = TuningLog(tmp_path / "t.jsonl")
    assert len(again) == 3
    assert again.best(task)["cost"] == 100.0
    rec = again.find(task, {"tile": [32, 8], "lanes": 8, "unroll": True}, "synthetic")
    assert rec["cost"] == 100.0 and rec["unit"] == "cycles" and "numpy" in rec["versions"]
    lines = (tmp_path / "t.jsonl").read_text().splitlines()
    assert [json.loads(line)["knobs"]["tile"][1] for line in lines] == [4, 8, 16]


def test_duplicate_lines_in_a_file_are_read_once(tmp_path):
    task = synthetic_task()
    line = json.dumps(_record(task, 4, 300.0))
    (tmp_path / "t.jsonl").write_text(line + "\n" + line + "\n")
    assert len(TuningLog(tmp_path / "t.jsonl")) == 1


def test_partial_last_line_is_ignored_then_cut(tmp_path):
    task = synthetic_task()
    path = tmp_path / "t.jsonl"
    full = json.dumps(_record(task, 4, 300.0)) + "\n"
    path.write_text(full + json.dumps(_record(task, 8, 100.0))[:40])
    log = TuningLog(path)
    assert len(log) == 1 and log.skipped_lines == 1
    log.append(_record(task, 16, 200.0))
    lines = path.read_text().splitlines()
    assert len(lines) == 2 and all(json.loads(x) for x in lines)


def test_corrupt_middle_line_is_an_error(tmp_path):
    path = tmp_path / "t.jsonl"
    path.write_text("{not json}\n" + json.dumps(_record(synthetic_task(), 4, 1.0)) + "\n")
    with pytest.raises(CompileError, match="line 1 must be a JSON record"):
        TuningLog(path)


KILLER = textwrap.dedent("""
    import os, signal, sys
    sys.path.insert(0, {root!r})
    from tests.compiler.tune.synthetic import synthetic_task
    from vtalab.compiler.tune import TuningLog, tune_task
    real_write, count = os.write, [0]
    def write(fd, data):
        count[0] += 1
        if count[0] == {kill_at}:          # half a record on disk, then SIGKILL
            real_write(fd, data[:len(data) // 2])
            os.kill(os.getpid(), signal.SIGKILL)
        return real_write(fd, data)
    os.write = write
    tune_task(synthetic_task(), 30, TuningLog({log!r}), strategy="random",
              measure="synthetic", seed=5)
""")


def test_sigkill_mid_append_resumes_without_loss_or_duplicates(tmp_path):
    log_path = str(tmp_path / "t.jsonl")
    script = KILLER.format(root=ROOT, kill_at=7, log=log_path)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, timeout=120)
    assert proc.returncode == -9, proc.stderr.decode()[-2000:]
    data = open(log_path, "rb").read()
    assert not data.endswith(b"\n")                       # it died mid-record
    survived = TuningLog(log_path)
    assert len(survived) == 6
    res = tune_task(synthetic_task(), 30, TuningLog(log_path), strategy="random",
                    measure="synthetic", seed=5)
    assert res.resumed == 6 and len(res.history) == 30
    final = TuningLog(log_path)
    keys = [point_key(r["knobs"]) for r in final.records]
    assert len(final) == 30 and len(set(keys)) == 30
    lines = open(log_path).read().splitlines()
    assert len(lines) == 30 and all(json.loads(x) for x in lines)
    # every record written before the kill is still there, unchanged and first
    assert final.records[:6] == survived.records
