"""The Dask executor on a LocalCluster: the executor contract (every item one outcome, a
killed worker's item retried, an exception an error, a hung item timed out), the same
sweep records as the local process pool, and a worker killed mid-point retried in a
sweep. Skipped without dask[distributed]."""
from __future__ import annotations

import pytest

pytest.importorskip("distributed", reason="dask[distributed] is not installed "
                    "(pip install 'vtalab[dse]')")

from vtalab.compiler.errors import CompileError  # noqa: E402
from vtalab.compiler.tune.executor import LocalExecutor, SerialExecutor  # noqa: E402
from vtalab.compiler.tune.executor_dask import DaskExecutor, get_sweep_executor  # noqa: E402
from vtalab.dse.report import load_records  # noqa: E402
from vtalab.dse.spec import load_spec  # noqa: E402
from vtalab.dse.sweep import run_sweep  # noqa: E402

from .helpers import die_once, evaluate_or_die, stable, write_spec  # noqa: E402


@pytest.fixture(scope="module")
def dask_ex():
    with DaskExecutor(n_workers=2, retries=2, timeout=20) as ex:
        yield ex


def test_dask_executor_keeps_the_executor_contract(tmp_path, dask_ex):
    marker = str(tmp_path / "died-once")
    items = [("ok", 1), ("die", marker), ("ok", 2), ("raise", 3), ("ok", 4)]
    got = dict(dask_ex.map(die_once, items))
    assert sorted(got) == list(range(5))
    assert got[1].value == ("die", marker) and got[1].attempts == 2 and got[1].error is None
    assert got[3].value is None and got[3].error == "ValueError: bad item 3"
    assert [got[i].value for i in (0, 2, 4)] == [("ok", 1), ("ok", 2), ("ok", 4)]


def test_dask_executor_times_out_a_hung_item_and_goes_on(tmp_path):
    with DaskExecutor(n_workers=2, retries=1, timeout=3) as ex:
        got = dict(ex.map(die_once, [("hang", 60), ("ok", 1), ("ok", 2)]))
        assert got[0].error == "timeout after 3 s"
        assert got[1].value == ("ok", 1) and got[2].value == ("ok", 2)
        assert dict(ex.map(die_once, [("ok", 3)]))[0].value == ("ok", 3)   # restarted


def test_a_worker_that_always_dies_gives_an_error_after_the_retries(tmp_path, dask_ex):
    (index, outcome), = list(dask_ex.map(die_once, [("always-die", 0)]))
    assert outcome.value is None and outcome.error == "worker died (3 attempts)"
    assert outcome.attempts == 3


def test_dask_gives_the_same_records_as_the_local_pool(tmp_path, dask_ex):
    spec = load_spec(write_spec(tmp_path))
    with LocalExecutor(jobs=2) as pool:
        run_sweep(spec, tmp_path / "pool", executor=pool, progress=False)
    run_sweep(spec, tmp_path / "dask", executor=dask_ex, progress=False)
    pool_recs = load_records(tmp_path / "pool" / "results.jsonl")
    assert len(pool_recs) == 12
    assert stable(load_records(tmp_path / "dask" / "results.jsonl")) == stable(pool_recs)


def test_a_dask_worker_killed_mid_point_is_retried(tmp_path, monkeypatch, dask_ex):
    monkeypatch.setenv("VTALAB_TEST_MARKER", str(tmp_path / "died"))
    spec = load_spec(write_spec(tmp_path))
    with DaskExecutor(n_workers=2, retries=2) as ex:      # workers inherit the marker path
        summary = run_sweep(spec, tmp_path / "dask", executor=ex, progress=False,
                            evaluate=evaluate_or_die)
    assert (tmp_path / "died").exists() and not summary.failed and summary.evaluated == 4
    run_sweep(spec, tmp_path / "serial", executor=SerialExecutor(), progress=False)
    assert stable(load_records(tmp_path / "dask" / "results.jsonl")) == \
        stable(load_records(tmp_path / "serial" / "results.jsonl"))


def test_get_sweep_executor_dispatches_by_scheduler():
    assert isinstance(get_sweep_executor(1), SerialExecutor)
    assert isinstance(get_sweep_executor(2), LocalExecutor)
    assert isinstance(get_sweep_executor(2, "local"), DaskExecutor)
    assert get_sweep_executor(1, "tcp://head:8786").address == "tcp://head:8786"
    with pytest.raises(CompileError, match="scheduler must be 'local' or a Dask scheduler "
                                           "address .*, not 'head'"):
        get_sweep_executor(1, "head")
