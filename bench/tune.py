"""Autotuner search efficiency: trials to reach 1.03x of the best known, XGBoost-SA vs
random vs grid, median of 5 seeds, on the ten ResNet-18 conv tasks and two CPU kernels.

    python bench/tune.py [--config default] [--seeds 5] [--rtl-trials 32] [--no-rtl]
                         [--no-cpu] [--log bench-tune.jsonl] [--json F]

Part A (search efficiency, the TVM paper's claim). Measure: the analytic cycle model
(deterministic, so the best known is exhaustive over every valid point). The XGBoost
model gets NO analytic prior here (loop-IR and knob features only): with the prior as a
feature it would be handed the answer. Each run stops at the target or its budget.
Part B (RTL truth). Measure: cycles of the Verilated core, every result checked against
numpy. Per task: the untuned default (the cost model's first choice), XGBoost-SA with
the prior, and random, each ``--rtl-trials`` trials (seed 0); the best known is the best of
everything measured. Measurements are cached in ``--log`` (a tuning log), so a rerun only
measures what is new.
Part C (CPU kernels, wall time). Every point of the space is timed once (min of 5 runs
of >= 20 ms) into the log; strategies then replay those times (so all of them see the
same numbers), 5 seeds each, best known = exhaustive.
Prints tables, then one JSON line.
"""
from __future__ import annotations

import argparse
import json
import statistics
import time

from vtalab.compiler.tune.measure import MeasureResult, Measurer, register_measurer

LAYERS = [(64, 56, 64, 3, 1, 1), (64, 56, 128, 3, 2, 1), (64, 56, 128, 1, 2, 0),
          (128, 28, 128, 3, 1, 1), (128, 28, 256, 3, 2, 1), (128, 28, 256, 1, 2, 0),
          (256, 14, 256, 3, 1, 1), (256, 14, 512, 3, 2, 1), (256, 14, 512, 1, 2, 0),
          (512, 7, 512, 3, 1, 1)]
TARGET = 1.03


@register_measurer
class ReplayMeasure(Measurer):
    """Costs from a tuning log (measured before, once per point; read once)."""
    name, kinds = "replay", ("accel", "cpu")
    _tables: dict = {}

    def _measure(self, task, point) -> MeasureResult:
        from vtalab.compiler.tune import TuningLog
        path, measure = self.options["log"], self.options["of"]
        if path not in self._tables:
            self._tables[path] = TuningLog(path, readonly=True)
        rec = self._tables[path].find(task, point, measure)
        if rec is None:
            return MeasureResult(None, "not in the replay table")
        return MeasureResult(rec["cost"], rec["error"])


def conv_tasks(cfg):
    from vtalab.compiler.exec.templates import Epilogue
    from vtalab.compiler.topi import Conv2dShape
    from vtalab.compiler.tune.templates.accel import conv2d_task
    ep = Epilogue(bias=True, shifts=(7,), lo=0, hi=127)
    return [conv2d_task(cfg, Conv2dShape(1, c, h, h, f, k, s, p), ep)
            for c, h, f, k, s, p in LAYERS]


def cpu_tasks():
    from vtalab.compiler.tune.templates.cpu import conv2d_task, dense_task
    return [conv2d_task((1, 64, 28, 28), (64, 64, 3, 3), padding=1, bias=True, relu=True),
            dense_task(16, 512, 1000, bias=True)]


def trials_to(history, goal) -> int | None:
    for i, (_, cost) in enumerate(history, 1):
        if cost is not None and cost <= goal:
            return i
    return None


def median_trials(values: list, budget: int):
    """Median with a miss counted as past the budget; None if the median is a miss."""
    big = [v if v is not None else budget * 1000 for v in values]
    m = statistics.median_low(big)
    return None if m >= budget * 1000 else m


def race(tasks: list, bests: list, seeds: int, budgets, measure: str, options: dict,
         strategy_options: dict) -> list[dict]:
    """Per task: median trials to TARGET x best per strategy over seeds. Each seed tunes
    the tasks in order, the model-guided strategy with one history and one model for all
    of them (transfer: task k starts with a model trained on tasks 1..k-1)."""
    from vtalab.compiler.tune import tune_task
    runs = {name: [[] for _ in tasks] for name in ("xgb", "random", "grid")}
    for name in runs:
        for seed in range(seeds if name != "grid" else 1):
            history, models = [], {}
            for k, (task, best) in enumerate(zip(tasks, bests)):
                res = tune_task(task, budgets(name, task), None, name, measure, batch=8,
                                seed=seed, history=history, models=models,
                                measure_options=options, seed_default=False,
                                strategy_options=strategy_options.get(name),
                                stop_at=TARGET * best)
                runs[name][k].append(trials_to(res.history, TARGET * best))
    return [{name: {"median": median_trials(runs[name][k], budgets(name, task)),
                    "runs": runs[name][k], "budget": budgets(name, task)} for name in runs}
            for k, task in enumerate(tasks)]


def part_a(cfg, seeds: int, budget: int) -> list[dict]:
    tasks = conv_tasks(cfg)
    bests = [min(t.impl.prior(t, p) for p in t.impl.space(t).points()) for t in tasks]
    t0 = time.perf_counter()
    races = race(tasks, bests, seeds,
                 lambda name, t: len(t.impl.space(t)) if name == "grid" else budget,
                 "model", {"check": False}, {"xgb": {"use_prior": False}})
    rows = []
    for task, best, result in zip(tasks, bests, races):
        rows.append({"task": str(task), "points": len(task.impl.space(task)), "best": best,
                     **result})
        _print_race(rows[-1], "cycles")
    print(f"({time.perf_counter() - t0:.0f} s)")
    return rows


def part_b(cfg, trials: int, log_path: str, max_cycles: int) -> list[dict]:
    from vtalab.compiler.tune import TuningLog, tune_task
    rows = []
    logs = {name: TuningLog(f"{log_path}.rtl-{name}") for name in ("xgb", "random")}
    for task in conv_tasks(cfg):
        t0 = time.perf_counter()
        runs = {name: tune_task(task, trials, logs[name], name, "rtl", batch=8, seed=0,
                                seed_default=(name == "xgb"),
                                measure_options={"max_cycles": max_cycles})
                for name in ("xgb", "random")}
        default = task.impl.default(task)
        untuned = next(c for p, c in runs["xgb"].history if p == default)
        best = min(r["cost"] for log in logs.values() for r in log.for_task(task))
        sh = task.impl.shape(task)
        ideal = sh.macs / cfg.macs_per_cycle
        row = {"task": str(task), "untuned": untuned, "best_known": best,
               "xgb_best": runs["xgb"].best_cost, "random_best": runs["random"].best_cost,
               "xgb_to_target": trials_to(runs["xgb"].history, TARGET * best),
               "random_to_target": trials_to(runs["random"].history, TARGET * best),
               "util_untuned": ideal / untuned, "util_tuned": ideal / runs["xgb"].best_cost,
               "errors": runs["xgb"].errors + runs["random"].errors,
               "wall_s": time.perf_counter() - t0}
        rows.append(row)
        print(f"{row['task'][:40]:<40} {untuned:>10,.0f} {row['xgb_best']:>10,.0f} "
              f"{row['random_best']:>10,.0f} {best:>10,.0f} "
              f"{_t(row['xgb_to_target'], trials):>6} {_t(row['random_to_target'], trials):>6} "
              f"{row['util_untuned']:>6.1%} {row['util_tuned']:>6.1%}", flush=True)
    return rows


def part_c(seeds: int, log_path: str) -> list[dict]:
    from vtalab.compiler.tune import TuningLog, tune_task
    rows = []
    log = TuningLog(log_path)
    for task in cpu_tasks():
        space = task.impl.space(task)
        t0 = time.perf_counter()
        tune_task(task, len(space), log, "grid", "cpu", batch=16, seed_default=True)
        measured = time.perf_counter() - t0
        log = TuningLog(log_path)
        best = log.best(task)["cost"]
        default = log.find(task, task.impl.default(task), "cpu")["cost"]
        opts = {"log": log_path, "of": "cpu"}
        result = race([task], [best], seeds, lambda name, t: len(space), "replay", opts, {})
        rows.append({"task": str(task), "points": len(space), "best": best,
                     "default": default, **result[0], "measure_s": measured})
        _print_race(rows[-1], "s")
    return rows


def _t(v, budget) -> str:
    return f">{budget}" if v is None else f"{v:g}"


def _print_race(row: dict, unit: str) -> None:
    cells = " ".join(f"{_t(row[s]['median'], row[s]['budget']):>8}"
                     for s in ("xgb", "random", "grid"))
    best = f"{row['best']:,.0f}" if unit == "cycles" else f"{row['best'] * 1e6:,.1f} us"
    print(f"{row['task'][:44]:<44} {row['points']:>6} {best:>12} {cells}", flush=True)


def summary(rows: list[dict]) -> dict:
    """Sum of median trials over tasks (misses at the budget) and the xgb/random ratio."""
    def total(s):
        return sum(r[s]["median"] if r[s]["median"] is not None else r[s]["budget"]
                   for r in rows)
    xgb, rnd = total("xgb"), total("random")
    return {"xgb_trials": xgb, "random_trials": rnd, "grid_trials": total("grid"),
            "xgb_over_random": xgb / rnd, "target_quarter_met": xgb <= rnd / 4}


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default="default")
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--budget", type=int, default=400, help="part A trials per run")
    parser.add_argument("--rtl-trials", type=int, default=32)
    parser.add_argument("--no-model", action="store_true", help="skip part A")
    parser.add_argument("--no-rtl", action="store_true")
    parser.add_argument("--rtl-max-cycles", type=int, default=4_000_000,
                        help="an RTL trial past this is an error record (a slow point)")
    parser.add_argument("--no-cpu", action="store_true")
    parser.add_argument("--log", default="bench-tune.jsonl", help="measurement cache")
    parser.add_argument("--json", help="also write the JSON here")
    args = parser.parse_args(argv)
    from vtalab.spec import preset
    cfg = preset(args.config)
    result = {"config": cfg.name, "target": TARGET, "seeds": args.seeds}
    if not args.no_model:
        print(f"== A: trials to {TARGET}x best (cycle model, exhaustive best), median of "
              f"{args.seeds} seeds; xgb without the analytic prior ==")
        print(f"{'task':<44} {'points':>6} {'best':>12} {'xgb':>8} {'random':>8} {'grid':>8}")
        result["model"] = part_a(cfg, args.seeds, args.budget)
        result["model_summary"] = summary(result["model"])
        print(json.dumps(result["model_summary"]))
    if not args.no_cpu:
        print("\n== C: CPU kernels, wall time (every point timed once, then replayed) ==")
        print(f"{'task':<44} {'points':>6} {'best':>12} {'xgb':>8} {'random':>8} {'grid':>8}")
        result["cpu"] = part_c(args.seeds, args.log)
        result["cpu_summary"] = summary(result["cpu"])
        print(json.dumps(result["cpu_summary"]))
    if not args.no_rtl:
        print(f"\n== B: RTL cycles, {args.rtl_trials} trials each (seed 0), best known = "
              f"best of all RTL measurements ==")
        print(f"{'task':<40} {'untuned':>10} {'xgb':>10} {'random':>10} {'best':>10} "
              f"{'xgb@':>6} {'rnd@':>6} {'util0':>6} {'util':>6}")
        result["rtl"] = part_b(cfg, args.rtl_trials, args.log, args.rtl_max_cycles)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=1)
    print(json.dumps(result))
    return result


if __name__ == "__main__":
    main()
