"""Measurement: results are checked (a wrong result is a failed trial), errors become
records, the rtl measure gives the Verilated core's cycles; the executor retries a killed
worker and times out a hung one."""
import os
import signal
import time
from functools import partial

import numpy as np
import pytest

from vtalab.compiler.exec.templates import Epilogue
from vtalab.compiler.topi import Conv2dShape
from vtalab.compiler.tune import LocalExecutor, TuningLog, get_measurer, tune_task
from vtalab.compiler.tune.templates.accel import CONV2D, Conv2dTemplate, conv2d_task, dense_task
from vtalab.spec import preset

from ...rtl.backends import require_rtl

EPILOGUES = [Epilogue(bias=True, shifts=(7,), lo=-128, hi=127),
             Epilogue(bias=True, residual=True, residual_shifts=(2,), shifts=("vec",), lo=0,
                      hi=127),
             Epilogue(bias=True, residual=True, residual_shifts=(-2,), shifts=(9,), lo=0,
                      hi=127, residual_gemm=True),
             Epilogue(bias=True, residual=True, residual_shifts=(3,), shifts=(9,), lo=-128,
                      hi=127, residual_gemm=True)]


def _conv(ep=EPILOGUES[0]):
    return conv2d_task(preset("tiny"), Conv2dShape(1, 16, 8, 8, 16, 3, 1, 1), ep)


@pytest.mark.parametrize("ep", EPILOGUES)
def test_every_point_matches_the_numpy_reference(ep):
    task = _conv(ep)
    m = get_measurer("model")
    points = task.impl.space(task).points()
    for p in points[::max(1, len(points) // 12)]:
        res = m.measure(task, p)
        assert res.error is None and res.cost == CONV2D.prior(task, p)


def test_dense_points_match_the_reference():
    task = dense_task(preset("tiny"), 4, 64, 32, EPILOGUES[0])
    m = get_measurer("model")
    for p in task.impl.space(task).points()[:10]:
        assert m.measure(task, p).error is None


def test_a_wrong_result_is_a_failed_trial(monkeypatch, tmp_path):
    task = _conv()
    bad = task.impl.default(task)
    real_run = Conv2dTemplate.run

    def corrupt(self, task, point, inputs, device=None):
        out, counters = real_run(self, task, point, inputs, device)
        if point == bad:
            out = out.copy()
            out.flat[3] ^= 1
        return out, counters
    monkeypatch.setattr(Conv2dTemplate, "run", corrupt)
    res = get_measurer("model").measure(task, bad)
    assert res.cost is None and res.error.startswith("wrong result: 1 of")
    log = TuningLog(tmp_path / "t.jsonl")
    out = tune_task(task, 6, log, strategy="grid", measure="model")
    assert out.history[0] == (bad, None)                   # the default, measured first
    assert log.best(task)["knobs"] != bad
    assert log.find(task, bad, "model")["error"].startswith("wrong result")


def test_exceptions_and_invalid_points_are_error_records():
    task = _conv()
    m = get_measurer("model")
    p = dict(task.impl.default(task), tile_h=[1, 8], vthreads=4, vthread_axis="h")
    assert m.measure(task, p).error.startswith("invalid point: breaks")
    assert "knobs must be" in m.measure(task, {}).error
    assert "must be one of its values" in m.measure(task, dict(p, tile_h=[3, 3])).error

    def boom(*args):
        raise RuntimeError("simulated build failure")
    task.impl.__class__.run, real = boom, task.impl.__class__.run
    try:
        assert m.measure(task, task.impl.default(task)).error == \
            "RuntimeError: simulated build failure"
    finally:
        task.impl.__class__.run = real


def test_rtl_cycles_are_checked_and_deterministic():
    require_rtl()
    task = _conv(EPILOGUES[1])
    m = get_measurer("rtl", dram_bytes=4 << 20)
    p = task.impl.default(task)
    first, second = m.measure(task, p), m.measure(task, p)
    assert first.error is None and first.cost == second.cost > 0
    assert first.detail["cycles"] == first.cost


def _sleep_or_die(item):
    kind, value = item
    if kind == "die" and not os.path.exists(value):
        open(value, "w").close()
        os.kill(os.getpid(), signal.SIGKILL)          # first attempt only
    if kind == "hang":
        time.sleep(value)
    return (kind, value)


def test_executor_retries_a_killed_worker_and_times_out_a_hung_one(tmp_path):
    marker = str(tmp_path / "died-once")
    items = [("ok", 1), ("die", marker), ("ok", 2), ("hang", 30), ("ok", 3)]
    with LocalExecutor(jobs=2, timeout=8, retries=2) as ex:
        got = dict(ex.map(_sleep_or_die, items))
    assert sorted(got) == list(range(5))
    assert got[1].value == ("die", marker) and got[1].attempts == 2
    assert got[3].error == "timeout after 8 s"
    assert [got[i].value for i in (0, 2, 4)] == [("ok", 1), ("ok", 2), ("ok", 3)]
    assert np.all([got[i].error is None for i in (0, 1, 2, 4)])


_STARTED: list = []


def _note_start(path):
    _STARTED.append(os.getpid())
    with open(path, "a") as f:
        f.write(f"{os.getpid()}\n")


def _worker_pid(_item):
    return os.getpid() if _STARTED else None


def test_prestarted_workers_have_run_their_initializer(tmp_path):
    started = tmp_path / "started"
    with LocalExecutor(jobs=2, initializer=partial(_note_start, str(started))) as ex:
        ex.prestart()                              # nothing mapped yet: both start anyway
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and (not started.exists()
                                               or len(started.read_text().split()) < 2):
            time.sleep(0.05)
        pids = started.read_text().split()
        assert len(pids) == 2
        got = dict(ex.map(_worker_pid, range(6)))
    assert started.read_text().split() == pids     # the same two workers ran the items
    assert {str(o.value) for o in got.values()} <= set(pids)


def _die_once(marker):
    try:
        os.close(os.open(marker, os.O_CREAT | os.O_EXCL))
    except FileExistsError:
        return
    os.kill(os.getpid(), signal.SIGKILL)               # the first worker dies starting up


def test_a_worker_killed_while_starting_up_costs_no_item(tmp_path):
    marker = str(tmp_path / "died")
    with LocalExecutor(jobs=2, retries=2, initializer=partial(_die_once, marker)) as ex:
        ex.prestart()
        time.sleep(1.0)                                # let it die before anything is mapped
        got = dict(ex.map(_sleep_or_die, [("ok", k) for k in range(4)]))
    assert os.path.exists(marker)
    assert [got[k].value for k in range(4)] == [("ok", k) for k in range(4)]


def test_leaving_with_an_error_does_not_wait_for_workers_starting_up(tmp_path):
    start = time.monotonic()
    with pytest.raises(RuntimeError, match="caller failed"):
        with LocalExecutor(jobs=2, initializer=partial(time.sleep, 30)) as ex:
            ex.prestart()
            raise RuntimeError("caller failed")
    assert time.monotonic() - start < 20


def test_map_takes_an_item_only_when_a_worker_is_free():
    """A generator still making items: the first two run while the third is not yet
    made; it is taken once one of them has finished (its index: its place in that order)."""
    taken, finished = [], []

    def produce():
        for k in range(5):
            taken.append((k, len(finished)))
            yield ("ok", k)
    with LocalExecutor(jobs=2) as ex:
        for i, outcome in ex.map(_sleep_or_die, produce()):
            finished.append(i)
            assert outcome.value == ("ok", i)
    assert sorted(finished) == list(range(5))
    assert taken[:2] == [(0, 0), (1, 0)]
    assert [done for _, done in taken[2:]] == [1, 2, 3]


def test_an_error_of_the_item_source_reaches_the_caller():
    def produce():
        yield ("ok", 1)
        raise ValueError("the source failed")
    with LocalExecutor(jobs=2) as ex:
        with pytest.raises(ValueError, match="the source failed"):
            list(ex.map(_sleep_or_die, produce()))


@pytest.mark.parametrize("op,broadcast,shift", [("add", False, 3), ("mul", True, 0),
                                                ("min", True, 2)])
def test_alu_elementwise_points_match_the_reference(op, broadcast, shift):
    from vtalab.compiler.tune.templates.alu import elementwise_task
    task = elementwise_task(preset("tiny"), 24, op, broadcast, shift)
    m = get_measurer("model")
    points = task.impl.space(task).points()
    assert len(points) > 6
    for p in points:
        res = m.measure(task, p)
        assert res.error is None and res.cost > 0
