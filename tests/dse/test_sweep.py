"""A small sweep end to end (tiny-derived configs, one-layer workloads, cycle model): JSON
lines, CSV and PNGs; a rerun resumes without redoing or doubling anything, also after the
sweep was SIGKILLed; a pool worker killed mid-point is retried; model-guided search."""
from __future__ import annotations

import csv
import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from vtalab.cli import main
from vtalab.compiler.tune.executor import LocalExecutor
from vtalab.dse.report import load_records
from vtalab.dse.spec import load_spec
from vtalab.dse.sweep import run_sweep

from .helpers import evaluate_or_die, stable, write_spec

ROOT = Path(__file__).resolve().parents[2]


def _lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _keys(records) -> list:
    return [(r["fingerprint"], r["workload"], r["source"]) for r in records]


def test_small_sweep_writes_jsonl_csv_and_plots(tmp_path, capsys):
    spec = write_spec(tmp_path, extra_sweep="acc_depth = [128, 100]")
    out = tmp_path / "out"
    assert main(["dse", str(spec), "--out", str(out), "-q"]) == 0
    records = _lines(out / "results.jsonl")
    kinds = [r["kind"] for r in records]
    # 4 runnable points x (2 workloads + 1 area record); 4 points rejected (acc_depth 100)
    assert kinds.count("workload") == 8 and kinds.count("area") == 4
    assert kinds.count("rejected") == 4
    assert all("acc_depth must be a power of two" in r["error"]
               for r in records if r["kind"] == "rejected")
    ok = [r for r in records if r["kind"] == "workload"]
    assert all(r["error"] is None for r in ok)
    for r in ok:
        m, cfg = r["metrics"], r["config"]
        assert m["cycles"] > m["ideal_cycles"] > 0 and 0 < m["utilization"] <= 1
        assert m["gops"] == pytest.approx(2 * m["accel_macs"] / (m["cycles"] / (
            cfg["clock_mhz"] * 1e6)) / 1e9)
        assert m["dram_bytes"] > 0 and m["accel_share"] == 1.0
        accel = [lay for lay in r["layers"] if lay["placement"] == "accel"]
        assert len(accel) == 1 and accel[0]["cycles_model"] == m["cycles"]
    assert len(set(_keys(records))) == len(records)
    rows = list(csv.DictReader(open(out / "results.csv")))
    assert len(rows) == 12 and {"cycles", "gops", "dsp", "bram", "gops_per_dsp"} <= set(rows[0])
    for name in ("pareto.png", "roofline-c3.png", "utilization-c3.png"):
        assert (out / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    text = capsys.readouterr().out
    assert "4 points evaluated, 0 already in the log, 4 rejected, 0 failed" in text
    assert "Pareto front on cycles vs dsp" in text

    # a rerun without --resume refuses; with it, nothing is redone or doubled
    assert main(["dse", str(spec), "--out", str(out), "-q"]) == 2
    assert "must not exist without --resume" in capsys.readouterr().err
    assert main(["dse", str(spec), "--out", str(out), "-q", "--resume"]) == 0
    assert "0 points evaluated, 4 already in the log" in capsys.readouterr().out
    assert _lines(out / "results.jsonl") == records

    # the report redraws from the results alone, for another workload and axis
    assert main(["dse", "report", str(out / "results.jsonl"), "--out", str(tmp_path / "r"),
                 "--workload", "fc", "--y", "gops"]) == 0
    assert (tmp_path / "r" / "roofline-fc.png").exists()
    assert main(["dse", "report", str(out / "results.jsonl"), "--y", "speed"]) == 2
    assert "--y must be one of" in capsys.readouterr().err


KILLER = """
import sys
sys.argv = ["vtalab", "dse", {spec!r}, "--out", {out!r}]
from vtalab.cli import main
main()
"""


def test_sigkill_mid_sweep_then_resume_loses_and_doubles_nothing(tmp_path):
    spec = write_spec(tmp_path, extra_sweep="acc_depth = [128, 256]")
    out = tmp_path / "out"
    results = out / "results.jsonl"
    proc = subprocess.Popen([sys.executable, "-c", KILLER.format(spec=str(spec), out=str(out))],
                            cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        if results.exists() and len(results.read_bytes().splitlines()) >= 4:
            break
        time.sleep(0.01)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    before = _lines(results)
    assert 0 < len(before) < 24, "the kill must land mid-sweep"
    summary = run_sweep(load_spec(spec), out, resume=True, progress=False)
    after = _lines(results)
    assert after[:len(before)] == before                    # nothing lost or rewritten
    assert len(after) == 24 and len(set(_keys(after))) == 24    # 8 points x 3, no doubles
    assert summary.skipped >= 1 and summary.evaluated + summary.skipped == 8


def test_a_pool_worker_killed_mid_point_is_retried(tmp_path, monkeypatch):
    monkeypatch.setenv("VTALAB_TEST_MARKER", str(tmp_path / "died"))
    spec = load_spec(write_spec(tmp_path))
    with LocalExecutor(jobs=2, retries=2) as ex:
        summary = run_sweep(spec, tmp_path / "pool", executor=ex, progress=False,
                            evaluate=evaluate_or_die)
    assert (tmp_path / "died").exists() and not summary.failed
    serial = run_sweep(spec, tmp_path / "serial", progress=False)
    assert serial.evaluated == summary.evaluated == 4
    assert stable(load_records(tmp_path / "pool" / "results.jsonl")) == \
        stable(load_records(tmp_path / "serial" / "results.jsonl"))


def test_model_guided_search_runs_the_budget_and_resumes(tmp_path):
    pytest.importorskip("xgboost")
    spec_path = write_spec(tmp_path, extra_sweep="inp_depth = [256, 512]\nwgt_depth = [64, 128]",
                           search='strategy = "xgb"\nbatch = 3\nobjective = "latency"')
    spec = load_spec(spec_path)
    spec.budget = 7
    first = run_sweep(spec, tmp_path / "x", progress=False)
    assert first.evaluated == 7
    records = load_records(tmp_path / "x" / "results.jsonl")
    assert len({r["fingerprint"] for r in records}) == 7
    spec.budget = 10
    more = run_sweep(spec, tmp_path / "x", resume=True, progress=False)
    assert more.evaluated == 3 and more.skipped == 7       # observed again, not rerun
    assert len({r["fingerprint"] for r in load_records(tmp_path / "x" / "results.jsonl")}) == 10


def test_retry_errors_runs_only_the_failed_records_again(tmp_path):
    spec = load_spec(write_spec(tmp_path))
    out = tmp_path / "out"
    run_sweep(spec, out, progress=False)
    path = out / "results.jsonl"
    records = _lines(path)
    index = next(i for i, r in enumerate(records) if r["kind"] == "workload")
    good = dict(records[index])
    records[index].update(error="ImportError: a tree in the middle of a refactor", metrics={})
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    assert run_sweep(spec, out, resume=True, progress=False).evaluated == 0   # kept
    again = run_sweep(spec, out, resume=True, retry_errors=True, progress=False)
    assert again.evaluated == 1 and again.skipped == 3
    after = load_records(path)
    assert len(after) == 12 and not any(r["error"] for r in after)
    redone = next(r for r in after if _keys([r]) == _keys([good]))
    assert redone["metrics"] == good["metrics"]
