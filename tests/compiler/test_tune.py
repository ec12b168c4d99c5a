"""compiler/tune: the cost model's candidates, the tuning log (resume, atomic writes) and
the measured knob search (deterministic; a second run measures nothing)."""
import json

import pytest

from vtalab.compiler.errors import CompileError
from vtalab.compiler.topi import Conv2dShape
from vtalab.compiler.tune import (EpilogueCost, TuningLog, best_conv2d_knobs, conv2d_candidates,
                                  conv2d_tune, workload_key)
from vtalab.compiler.tune.cost import fits
from vtalab.spec import preset

SHAPE = Conv2dShape(1, 64, 14, 14, 64, 3, 1, 1)


def fake_measure(calls):
    def measure(kn):
        calls.append(kn)
        return 1000 + 7 * kn.tile_h + 3 * kn.tile_co + kn.tile_ci   # any fixed function
    return measure


def test_candidates_fit_and_are_deterministic():
    cfg = preset("default")
    ep = EpilogueCost(alu_ops=5, vectors=1, residual=True)
    first = conv2d_candidates(cfg, SHAPE, 2, ep)
    assert first and first == conv2d_candidates(cfg, SHAPE, 2, ep)
    assert all(fits(cfg, SHAPE, kn, ep) and kn.vthreads == 2 for kn in first)


def test_log_records_survive_reopening(tmp_path):
    cfg = preset("tiny")
    log = TuningLog.open(cfg, tmp_path)
    log.record("w", {"a": 1}, 50)
    log.record("w", {"a": 2}, 40)
    again = TuningLog.open(cfg, tmp_path)
    assert again.get("w", {"a": 1}) == 50
    assert again.best("w") == ({"a": 2}, 40)
    assert [p.name for p in tmp_path.iterdir()] == [f"{cfg.fingerprint()}.json"]  # no temps


def test_log_write_is_atomic(tmp_path, monkeypatch):
    cfg = preset("tiny")
    log = TuningLog.open(cfg, tmp_path)
    log.record("w", {"a": 1}, 50)
    before = log.path.read_text()

    def broken_dump(*args, **kwargs):
        raise OSError("disk full")
    monkeypatch.setattr(json, "dump", broken_dump)
    with pytest.raises(OSError):
        log.record("w", {"a": 2}, 40)
    assert log.path.read_text() == before           # the old file is untouched
    assert len(list(tmp_path.iterdir())) == 1        # and the temp file is gone


def test_log_rejects_corrupt_or_foreign_files(tmp_path):
    cfg = preset("tiny")
    path = tmp_path / f"{cfg.fingerprint()}.json"
    path.write_text("{not json")
    with pytest.raises(CompileError, match="must be valid JSON"):
        TuningLog.open(cfg, tmp_path)
    path.write_text(json.dumps({"fingerprint": "0" * 16, "workloads": {}}))
    with pytest.raises(CompileError, match="must be for config fingerprint"):
        TuningLog.open(cfg, tmp_path)


def test_tune_measures_top_candidates_then_resumes(tmp_path):
    cfg = preset("default")
    calls = []
    log = TuningLog.open(cfg, tmp_path)
    best = conv2d_tune(cfg, SHAPE, 2, fake_measure(calls), log, top=3)
    top = conv2d_candidates(cfg, SHAPE, 2)[:3]
    assert calls == top
    assert best == min(top, key=fake_measure([]))
    calls.clear()
    again = conv2d_tune(cfg, SHAPE, 2, fake_measure(calls), TuningLog.open(cfg, tmp_path),
                        top=3)
    assert calls == [] and again == best
    assert best_conv2d_knobs(cfg, SHAPE, 2, log=TuningLog.open(cfg, tmp_path)) == best


def test_interrupted_tuning_resumes_where_it_stopped(tmp_path):
    cfg = preset("default")
    calls = []
    inner = fake_measure(calls)

    def dies_on_third(kn):
        if len(calls) == 2:
            raise KeyboardInterrupt
        return inner(kn)
    with pytest.raises(KeyboardInterrupt):
        conv2d_tune(cfg, SHAPE, 2, dies_on_third, TuningLog.open(cfg, tmp_path), top=4)
    log = TuningLog.open(cfg, tmp_path)
    assert len(log.entries[workload_key(SHAPE, 2)]) == 2
    calls.clear()
    conv2d_tune(cfg, SHAPE, 2, fake_measure(calls), log, top=4)
    assert calls == conv2d_candidates(cfg, SHAPE, 2)[2:4]


def test_without_a_log_the_cost_model_decides():
    cfg = preset("default")
    assert best_conv2d_knobs(cfg, SHAPE, 1) == conv2d_candidates(cfg, SHAPE, 1)[0]


def test_tune_on_rtl_tiny(tmp_path):
    from vtalab.compiler.tune import rtl_measure
    from tests.rtl.backends import open_backend
    cfg = preset("tiny")
    sh = Conv2dShape(1, 16, 8, 8, 16, 3, 1, 1)
    with open_backend("rtl", cfg, dram_bytes=4 << 20) as dev:
        log = TuningLog.open(cfg, tmp_path)
        best = conv2d_tune(cfg, sh, 2, rtl_measure(cfg, sh, dev), log, top=2)
    assert log.best(workload_key(sh, 2))[0]["tile_h"] == best.tile_h
