"""Every strategy finds the optimum of a small synthetic space; the model-guided one needs
fewer trials than random; errors are records, not crashes; resume measures nothing twice."""
import pytest

from vtalab.compiler.tune import TuningLog, tune_task
from vtalab.compiler.tune.space import point_key
from vtalab.compiler.tune.strategy import get_strategy, strategy_names

from .synthetic import SYNTHETIC, synthetic_task

pytest.importorskip("xgboost", reason="the xgb strategy needs xgboost")

OPTIMUM = 100.0


def trials_to_optimum(res) -> int:
    for i, (_, c) in enumerate(res.history, 1):
        if c == OPTIMUM:
            return i
    return 10 ** 6


@pytest.mark.parametrize("strategy", ["grid", "random", "xgb"])
def test_strategy_finds_the_optimum(strategy):
    task = synthetic_task()
    size = len(SYNTHETIC.space(task))
    res = tune_task(task, size, strategy=strategy, measure="synthetic", seed_default=False)
    assert res.best_cost == OPTIMUM
    keys = [str(p) for p, _ in res.history]
    assert len(keys) == len(set(keys))            # never the same point twice
    assert res.errors == 2                        # the failing points: error records


def test_model_guided_beats_random_on_median():
    task = synthetic_task(1024)
    xgb, rnd = [], []
    for seed in range(5):
        for name, out in (("xgb", xgb), ("random", rnd)):
            res = tune_task(task, 120, strategy=name, measure="synthetic", seed=seed,
                            batch=8, seed_default=False,
                            strategy_options={"exhaustive_limit": 0} if name == "xgb" else {})
            out.append(trials_to_optimum(res))
    xgb.sort(), rnd.sort()
    assert xgb[2] < rnd[2], (xgb, rnd)


def test_annealing_proposes_unmeasured_valid_points():
    task = synthetic_task(4096)
    strat = get_strategy("xgb", task, seed=3, exhaustive_limit=0, steps=30, walkers=16)
    first = strat.propose(8, set())
    space = SYNTHETIC.space(task)
    assert len(first) == 8 and all(space.valid(p) for p in first)
    strat.observe([(p, SYNTHETIC.cost(task, p)) for p in first])
    measured = {point_key(p) for p in first}
    second = strat.propose(8, measured)
    assert second and not measured & {point_key(p) for p in second}
    assert strat.walkers is not None and len(strat.walkers) == 16      # persistent walkers


def test_resume_from_log_measures_nothing_twice(tmp_path):
    task = synthetic_task()
    log = TuningLog(tmp_path / "t.jsonl")
    first = tune_task(task, 12, log, strategy="random", measure="synthetic", seed=1)
    assert len(log) == 12
    again = tune_task(task, 20, TuningLog(tmp_path / "t.jsonl"), strategy="random",
                      measure="synthetic", seed=1)
    assert again.resumed == 12 and len(again.history) == 20
    assert len(TuningLog(tmp_path / "t.jsonl")) == 20
    assert again.history[:12] == first.history


def test_default_point_is_measured_first():
    task = synthetic_task()
    res = tune_task(task, 4, strategy="random", measure="synthetic", seed=0)
    assert res.history[0][0] == SYNTHETIC.default(task)


def test_strategy_names():
    assert {"grid", "random", "xgb"} <= set(strategy_names())


def test_tasks_of_one_template_with_different_knobs_tune_together():
    pytest.importorskip("llvmlite", reason="CPU kernels need llvmlite")
    from vtalab.compiler.tune import tune
    from vtalab.compiler.tune.templates.cpu import pool_task
    tasks = [pool_task("global_avg", (1, 16, 7, 7)), pool_task("max", (1, 8, 16, 16), kernel=3,
                                                                stride=2, padding=1)]
    assert tasks[0].impl.space(tasks[0]).feature_names() != \
        tasks[1].impl.space(tasks[1]).feature_names()
    results = tune(tasks, trials=6, strategy="xgb", batch=2, progress=False,
                   measure_options={"repeat": 1, "min_repeat_ms": 1})
    assert all(r.best_cost is not None and r.errors == 0 for r in results)
