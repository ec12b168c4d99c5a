"""``vtalab tune``: extract a model's tasks, tune them, append to a tuning log."""
from __future__ import annotations

import argparse

from vtalab.spec.errors import VtaError


def add_parser(sub) -> None:
    tune = sub.add_parser("tune", help="autotune a model's accelerator layers and CPU "
                          "kernels into a tuning log (JSON lines, resumable)")
    tune.add_argument("model", help="ONNX model file")
    tune.add_argument("--log", required=True, help="tuning log to append to (.jsonl)")
    tune.add_argument("--trials", type=int, default=64, help="trials per task (default 64)")
    tune.add_argument("--config", default="default", help="preset name or .json/.toml file")
    tune.add_argument("--measure", default="rtl", choices=["rtl", "model"],
                      help="accelerator tasks: rtl cycles (default) or the cycle model "
                      "(results checked on the functional simulator); CPU kernels are "
                      "always timed on this CPU")
    tune.add_argument("--only", choices=["all", "accel", "cpu"], default="all",
                      help="which tasks to tune (default all)")
    tune.add_argument("--strategy", default="xgb", help="xgb (default), random or grid")
    tune.add_argument("--jobs", type=int, default=1, help="measurement worker processes")
    tune.add_argument("--timeout", type=float, default=600.0,
                      help="seconds per measurement before it is an error record")
    tune.add_argument("--batch", type=int, default=8, help="points measured per round")
    tune.add_argument("--early-stopping", type=int, default=None, metavar="N",
                      help="stop a task after N trials without improvement")
    tune.add_argument("--seed", type=int, default=0)
    tune.add_argument("--calibrate", metavar="DATA.npy", help="calibration inputs")
    tune.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from vtalab.compiler.tune import TuningLog, tune
    from vtalab.compiler.tune.extract import tasks_of_model
    from vtalab.compiler.tune.strategy import strategy_names
    if args.strategy not in strategy_names():
        raise VtaError(f"--strategy must be one of {strategy_names()}, not {args.strategy!r}")
    if args.trials < 1:
        raise VtaError(f"--trials must be at least 1, not {args.trials}")
    from vtalab.model_cli import calibration_for
    from vtalab.compiler.graph import load_onnx
    graph = load_onnx(args.model)
    tasks = tasks_of_model(graph, args.config, calibration_for(graph, args.calibrate, print))
    if args.only != "all":
        tasks = [t for t in tasks if t.impl.kind == args.only]
    log = TuningLog(args.log)
    print(f"{len(tasks)} tasks; log {args.log} ({len(log)} records before)")
    results = tune(tasks, args.trials, log, args.strategy, {"accel": args.measure}, args.jobs,
                   args.timeout, args.batch, args.seed, args.early_stopping)
    print(f"\n{'task':<48} {'trials':>6} {'errors':>6} {'default':>14} {'best':>14} {'gain':>6}")
    for res in results:
        print(_row(res))
    print(f"log {args.log}: {len(log)} records")
    return 0


def _row(res) -> str:
    task = res.task
    tpl = task.impl
    default = next((c for p, c in res.history if p == tpl.default(task)), None)
    best = res.best_cost

    def shown(v):
        if v is None:
            return "-"
        return f"{v:,.0f}" if tpl.unit == "cycles" else f"{v * 1e6:,.1f} us"
    gain = f"{default / best:.2f}x" if default and best else ""
    return (f"{str(task)[:48]:<48} {len(res.history):>6} {res.errors:>6} "
            f"{shown(default):>14} {shown(best):>14} {gain:>6}")
