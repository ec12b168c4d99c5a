"""The sweep: plan the points, evaluate them on an executor, stream records to one log.

    summary = run_sweep(spec, "out/", executor=None, jobs=2, scheduler=None, resume=False)

Grid and random plans are fixed up front; ``xgb`` proposes ``search.batch`` points per
round from the autotuner's model-guided strategy trained on the objective of the points
measured so far (records already in the log included, so a resumed search continues).
Points whose records are all in the log are skipped (``--resume``); a point whose worker
died past its retries or timed out is reported and left out of the log, so the next
resume runs it again. A workload that failed (a compile error, a wrong result) is an
error record, kept like any other; ``retry_errors`` (``--retry-errors``) drops those
before resuming. Only this process appends to the log.
"""
from __future__ import annotations

import json
import shutil
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from vtalab.compiler.tune.space import point_key
from vtalab.spec._atomic import write_text_atomic

from .evaluate import evaluate_point, make_item
from .points import ConfigSearch, check_point, label, plan_points, rtl_sample
from .results import SweepLog, area_key, make_record
from .spec import DseError, DseSpec

RESULTS = "results.jsonl"


@dataclass
class SweepSummary:
    out_dir: Path
    results: Path
    evaluated: int = 0                  # points run in this call
    skipped: int = 0                    # points already complete in the log
    rejected: int = 0
    failed: list = field(default_factory=list)     # (label, executor error)
    records: int = 0
    seconds: float = 0.0
    point_seconds: list = field(default_factory=list)


class Progress:
    """A bar over points on stderr, one line per finished point."""

    def __init__(self, total: int, enabled: bool = True, stream=None):
        self.total, self.done, self.enabled = total, 0, enabled
        self.stream = stream or sys.stderr
        self.t0 = time.perf_counter()

    def point(self, label: str, records: list, error: str | None = None) -> None:
        self.done += 1
        if not self.enabled:
            return
        width = 20
        bar = "#" * round(width * self.done / max(1, self.total))
        what = error or _brief(records)
        print(f"[{bar:<{width}}] {self.done}/{self.total} {label}: {what} "
              f"({time.perf_counter() - self.t0:.0f} s)", file=self.stream, flush=True)


def _brief(records: list) -> str:
    parts = []
    for rec in records:
        if rec["kind"] != "workload":
            continue
        m = rec["metrics"]
        name = rec["workload"].split("#")[0]
        if rec["error"]:
            parts.append(f"{name} {rec['source']} ERROR")
        else:
            parts.append(f"{name} {rec['source']} {m['cycles']:,} cycles "
                         f"{m['utilization']:.0%}")
    return "; ".join(parts) or "area only"


def open_log(out_dir: Path, resume: bool, retry_errors: bool = False) -> SweepLog:
    path = out_dir / RESULTS
    if path.exists() and path.stat().st_size and not resume:
        raise DseError(f"{path} must not exist without --resume (it holds a sweep): pass "
                       f"--resume to continue it, or choose another --out")
    if retry_errors and path.exists():
        drop_errors(path)
    return SweepLog(path)


def drop_errors(path: Path) -> int:
    """Rewrite the log without its failed workload and area records (rejected points stay:
    a Config error does not go away), so that a resume runs those points again. Atomic;
    only for a log no sweep is writing."""
    log = SweepLog(path, readonly=True)
    keep = [r for r in log.records if not r["error"] or r["kind"] == "rejected"]
    if len(keep) < len(log.records):
        write_text_atomic(path, "".join(json.dumps(r, sort_keys=True) + "\n" for r in keep))
    return len(log.records) - len(keep)


def run_sweep(spec: DseSpec, out_dir, executor=None, jobs: int = 1,
              scheduler: str | None = None, resume: bool = False,
              progress: bool = True, evaluate=evaluate_point,
              retry_errors: bool = False) -> SweepSummary:
    """Run (or resume) the sweep into ``out_dir``; ``evaluate`` is the work item
    function (a top-level function the executor's workers can import)."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    log = open_log(out_dir, resume, retry_errors)
    if spec.path and not (out_dir / "spec.toml").exists():
        shutil.copyfile(spec.path, out_dir / "spec.toml")
    summary = SweepSummary(out_dir, log.path)
    start = time.perf_counter()
    plan = plan_points(spec)
    _log_rejected(spec, plan.rejected, log, summary)
    own = executor is None
    if own:
        from vtalab.compiler.tune.executor_dask import get_sweep_executor
        executor = get_sweep_executor(jobs, scheduler, spec.timeout_s)
    try:
        if spec.strategy == "xgb":
            _search(spec, log, executor, summary, progress, evaluate)
        else:
            points = [p for p, _ in plan.points]
            _run_points(spec, points, rtl_sample(spec, points), log, executor, summary,
                        Progress(len(points), progress), evaluate)
    finally:
        if own:
            executor.close()
    summary.records, summary.seconds = len(log), time.perf_counter() - start
    return summary


def _log_rejected(spec, rejected, log, summary) -> None:
    summary.rejected = len(rejected)
    if spec.strategy != "grid":
        return           # sampled spaces: only runnable points are proposed
    for point, cfg, why in rejected:
        log.append(make_record("rejected", point, None, "*", "config", why,
                               label=cfg.name if cfg is not None
                               else label(point, {**spec.base.hardware_dict(), **point})))


def _sources(spec: DseSpec, key: str, sampled: set) -> list:
    if spec.cycles == "rtl":
        return ["rtl"]
    return ["model", "rtl"] if key in sampled else ["model"]


def _item(spec: DseSpec, point: dict, sampled: set, log: SweepLog):
    """The work still missing for ``point`` (None when the log has all of it)."""
    cfg, why = check_point(spec, point)
    if why:
        raise DseError(f"point {point} must be runnable, not rejected: {why}")
    fp = cfg.fingerprint()
    sources = _sources(spec, point_key(point), sampled)
    todo = [w for w in spec.workloads if not all(log.has(fp, w.key, s) for s in sources)]
    area = None if log.has(fp, area_key(spec.board), spec.area_flow) else spec.area_flow
    if not todo and area is None:
        return None
    missing = sources if todo else []
    return make_item(spec, point, cfg, todo, missing, area)


def _run_points(spec, points, sampled, log, executor, summary, bar, evaluate) -> list:
    """Evaluate the points not complete in the log; returns (point, records) pairs."""
    items, owners, done = [], [], []
    for point in points:
        item = _item(spec, point, sampled, log)
        if item is None:
            summary.skipped += 1
            bar.total -= 1
            done.append((point, None))
        else:
            items.append(item)
            owners.append(point)
    for index, outcome in executor.map(evaluate, items):
        point, label = owners[index], check_point(spec, owners[index])[0].name
        if outcome.error is not None:
            summary.failed.append((label, outcome.error))
            bar.point(label, [], f"FAILED ({outcome.error}; not logged, --resume retries)")
            continue
        for rec in outcome.value:
            log.append(rec)
        summary.evaluated += 1
        summary.point_seconds.append(_point_seconds(outcome.value))
        bar.point(label, outcome.value)
        done.append((point, outcome.value))
    return done


def _point_seconds(records: list) -> float:
    return round(sum(v for r in records for v in r["timing"].values()), 3)


def objective(spec: DseSpec, log: SweepLog, point: dict) -> float | None:
    """The search objective of a point from its records (None: failed or missing)."""
    cfg, why = check_point(spec, point)
    if why:
        return None
    fp, source = cfg.fingerprint(), spec.cycles
    cycles = 0
    for wl in spec.workloads:
        rec = log.get((fp, wl.key, source))
        if rec is None or rec["error"]:
            return None
        cycles += rec["metrics"]["cycles"]
    if spec.objective == "cycles":
        return float(cycles)
    latency_us = cycles / cfg.clock_mhz
    if spec.objective == "latency":
        return latency_us
    area = log.get((fp, area_key(spec.board), spec.area_flow))
    dsp = (area or {}).get("metrics", {}).get("dsp")
    return latency_us * max(1, dsp) if dsp is not None else None


def _search(spec: DseSpec, log: SweepLog, executor, summary, progress: bool,
            evaluate) -> None:
    """Model-guided: propose a batch, evaluate it, observe the objective, repeat. Points
    of this space already in the log are observed first and count against the budget."""
    search = ConfigSearch(spec)
    measured = _resumed(spec, log)
    search.observe([(dict(json.loads(k)), c) for k, c in measured.items()])
    summary.skipped = len(measured)
    bar = Progress(spec.budget - len(measured), progress)
    first = set(list(measured)[:spec.rtl_sample])
    while len(measured) < spec.budget:
        batch = search.propose(min(spec.batch, spec.budget - len(measured)), set(measured))
        if not batch:
            break                                    # every runnable point is measured
        if len(first) < spec.rtl_sample:
            first |= {point_key(p) for p in batch[:spec.rtl_sample - len(first)]}
        _run_points(spec, batch, first, log, executor, summary, bar, evaluate)
        results = [(p, objective(spec, log, p)) for p in batch]
        measured.update((point_key(p), c) for p, c in results)
        search.observe(results)


def _resumed(spec: DseSpec, log: SweepLog) -> dict:
    """point key -> objective of the points of this space the log already holds."""
    found: dict = {}
    for rec in log.records:
        point = rec["point"]
        if rec["kind"] != "workload" or sorted(point) != sorted(spec.sweep):
            continue
        key = point_key(point)
        if key not in found and check_point(spec, point)[1] is None:
            found[key] = objective(spec, log, point)
    return found
