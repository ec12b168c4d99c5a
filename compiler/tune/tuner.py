"""The tuning loop: propose a batch, measure it in parallel, log it, learn, repeat.

    results = tune(tasks, trials=64, log=TuningLog("tune.jsonl"), strategy="xgb",
                   measure=None, jobs=2)           # measure None: rtl / cpu by task kind

Resume: a task's records already in the log (same target and measure) count as trials
and are fed to the strategy first, so a rerun continues where a killed one stopped and
measures nothing twice. Tasks share one measurement history per template (transfer: the
cost model of the third layer has seen the first two).
"""
from __future__ import annotations

import sys
import time
from dataclasses import dataclass, field

from .executor import Executor, get_executor
from .log import TuningLog, make_record
from .measure import MeasureResult, default_measure, get_measurer
from .model import CostModel, model_key
from .space import point_key
from .strategy import Strategy, get_strategy

_MEASURERS: dict = {}


def measure_one(item) -> MeasureResult:
    """Executor work item (picklable): ``(task, point, measure name, options)``."""
    task, point, name, options = item
    key = (name, tuple(sorted(options.items())))
    measurer = _MEASURERS.get(key)
    if measurer is None:
        measurer = _MEASURERS[key] = get_measurer(name, **options)
    return measurer.measure(task, point)


@dataclass
class TaskResult:
    task: object
    measure: str
    history: list = field(default_factory=list)     # (point, cost or None), in order
    resumed: int = 0

    @property
    def best(self):
        ok = [(c, i, p) for i, (p, c) in enumerate(self.history) if c is not None]
        return min(ok, key=lambda t: (t[0], t[1])) if ok else None

    @property
    def best_cost(self):
        b = self.best
        return None if b is None else b[0]

    @property
    def best_point(self):
        b = self.best
        return None if b is None else b[2]

    @property
    def errors(self) -> int:
        return sum(c is None for _, c in self.history)


class Progress:
    """One status line per batch on stderr: task i/n, trials, best so far."""

    def __init__(self, n_tasks: int, stream=None, enabled: bool = True):
        self.n, self.stream, self.enabled = n_tasks, stream or sys.stderr, enabled
        self.t0 = time.perf_counter()

    def update(self, i: int, task, res: TaskResult, trials: int) -> None:
        if not self.enabled:
            return
        best = res.best_cost
        unit = task.impl.unit
        shown = "-" if best is None else (f"{best:,.0f} {unit}" if unit == "cycles"
                                          else f"{best * 1e6:,.1f} us")
        print(f"[task {i}/{self.n}] {task}  trials {len(res.history)}/{trials}  "
              f"errors {res.errors}  best {shown}  ({time.perf_counter() - self.t0:.0f} s)",
              file=self.stream, flush=True)


def tune_task(task, trials: int, log: TuningLog | None = None, strategy: str = "xgb",
              measure: str | None = None, executor: Executor | None = None,
              batch: int = 8, seed: int = 0, early_stopping: int | None = None,
              history: list | None = None, models: dict | None = None,
              measure_options: dict | None = None, on_batch=None,
              strategy_options: dict | None = None, seed_default: bool = True,
              stop_at: float | None = None) -> TaskResult:
    """Tune one task up to ``trials`` measurements (resumed ones count). With
    ``seed_default`` the template's default point is measured first, so the best is
    never worse than what compiling without a log gives. ``stop_at``: stop once a cost
    at or below it was measured (benchmarks)."""
    measure = measure_for(task, measure)
    options = dict((measure_options or {}).get(measure, measure_options or {}))
    res = TaskResult(task, measure)
    if log is not None:
        res.history = [(r["knobs"], r["cost"] if r["error"] is None else None)
                       for r in log.for_task(task, ok_only=False) if r["measure"] == measure]
        res.resumed = len(res.history)
    strat = _make_strategy(strategy, task, seed, history, models, strategy_options or {})
    strat.observe(list(res.history))
    measured = {point_key(p) for p, _ in res.history}
    own = executor is None
    executor = executor or get_executor(1)
    try:
        first = [task.impl.default(task)] if seed_default else []
        while len(res.history) < trials and not _stalled(res, early_stopping) and not (
                stop_at is not None and res.best_cost is not None and res.best_cost <= stop_at):
            points = strat.propose(min(batch, trials - len(res.history)), measured)
            if first:
                points = Strategy.fresh(first + points, measured, len(points) or 1)
                first = []
            if not points:
                break                                      # the space is exhausted
            results = _measure_batch(task, points, measure, options, executor, log)
            measured.update(point_key(p) for p in points)
            res.history.extend(results)
            strat.observe(results)
            if on_batch:
                on_batch(res)
    finally:
        if own:
            executor.close()
    return res


def measure_for(task, measure) -> str:
    """``measure``: a name, {kind: name} (e.g. {"accel": "model"}), or None (rtl / cpu)."""
    if isinstance(measure, dict):
        measure = measure.get(task.impl.kind)
    return measure or default_measure(task)


def _make_strategy(name, task, seed, history, models, options):
    if name != "xgb":
        return get_strategy(name, task, seed, **options)
    models = models if models is not None else {}
    use_prior = options.get("use_prior", True)
    key = (model_key(task), use_prior)
    model = models.get(key)
    if model is None:
        model = models[key] = CostModel(
            task.impl, use_prior=use_prior, seed=seed)
    return get_strategy(name, task, seed, model=model, history=history, **options)


def _measure_batch(task, points, measure, options, executor, log) -> list:
    items = [(task, p, measure, options) for p in points]
    results: list = [None] * len(points)
    for i, outcome in executor.map(measure_one, items):
        if outcome.error is not None:
            mr = MeasureResult(None, outcome.error)
        else:
            mr = outcome.value
        if log is not None:
            log.append(make_record(task, points[i], measure, mr.cost, mr.error, mr.detail))
        results[i] = (points[i], mr.cost if mr.error is None else None)
    return results


def _stalled(res: TaskResult, early_stopping: int | None) -> bool:
    if not early_stopping or res.best is None:
        return False
    return len(res.history) - 1 - res.best[1] >= early_stopping


def tune(tasks: list, trials: int, log: TuningLog | None = None, strategy: str = "xgb",
         measure: str | None = None, jobs: int = 1, timeout: float | None = None,
         batch: int = 8, seed: int = 0, early_stopping: int | None = None,
         measure_options: dict | None = None, progress: bool = True,
         strategy_options: dict | None = None, seed_default: bool = True) -> list[TaskResult]:
    """Tune every task in turn (one executor and one history for all of them)."""
    history: list = []
    if log is not None:            # transfer: what the log knows of other tasks
        from .task import Task
        for r in log.records:
            if r["error"] is None:
                history.append((Task(r["template"], r["task"].split("/", 1)[1],
                                     None, r["target"]), r["knobs"], r["cost"]))
        history = [h for h in history if _resolvable(h[0], tasks)]
    models: dict = {}
    bar = Progress(len(tasks), enabled=progress)
    out = []
    with get_executor(jobs, timeout) as ex:
        for i, task in enumerate(tasks, 1):
            res = tune_task(task, trials, log, strategy, measure, ex, batch, seed,
                            early_stopping, history, models, measure_options,
                            on_batch=lambda r, i=i, t=task: bar.update(i, t, r, trials),
                            strategy_options=strategy_options, seed_default=seed_default)
            bar.update(i, task, res, trials)
            out.append(res)
    return out


def _resolvable(task, tasks) -> bool:
    """A logged task can be used for transfer if a task being tuned shares its config
    (features need the Config; the logged task gets the tuned task's)."""
    for t in tasks:
        if t.target == task.target and t.template == task.template:
            object.__setattr__(task, "cfg", t.cfg)
            return task.key not in {x.key for x in tasks}
    return False
