"""``vtalab dse``: sweep a spec's design points, or redraw a results file's report.

    vtalab dse SPEC.toml [--out DIR] [--jobs J] [--scheduler local|tcp://...]
                         [--resume [--retry-errors]]
    vtalab dse report RESULTS.jsonl [--out DIR] [--x dsp] [--y cycles] [--workload W]
                      [--config LABEL|FINGERPRINT]
"""
from __future__ import annotations

import argparse
from pathlib import Path

from vtalab.spec.errors import VtaError


def add_parser(sub) -> None:
    dse = sub.add_parser("dse", help="design-space exploration: sweep Config points x "
                         "workloads (cycles, area, Fmax) into JSON lines, CSV and plots; "
                         "'vtalab dse report RESULTS.jsonl' redraws them")
    dse.add_argument("spec", metavar="SPEC.toml|report",
                     help="the sweep spec (TOML), or 'report' to redraw a results file")
    dse.add_argument("results", nargs="?", metavar="RESULTS.jsonl",
                     help="with report: the sweep's results.jsonl")
    dse.add_argument("--out", default=None,
                     help="output folder (sweep: dse-<spec name>; report: the results' folder)")
    dse.add_argument("--jobs", type=int, default=1, help="worker processes (default 1)")
    dse.add_argument("--scheduler", default=None, metavar="local|tcp://HOST:PORT",
                     help="run on Dask: 'local' starts a LocalCluster of --jobs workers, "
                          "an address uses that scheduler (default: local process pool)")
    dse.add_argument("--resume", action="store_true",
                     help="continue the sweep in --out: points already there are skipped")
    dse.add_argument("--retry-errors", action="store_true",
                     help="with --resume: run the points whose records are errors again")
    dse.add_argument("-q", "--quiet", action="store_true", help="no progress lines")
    dse.add_argument("--x", default=None, help="report: Pareto area axis dsp|bram|lut|ff")
    dse.add_argument("--y", default=None, help="report: Pareto axis cycles|latency_ms|gops")
    dse.add_argument("--workload", default=None, help="report: the workload to plot")
    dse.add_argument("--config", default=None,
                     help="report: the point for the roofline and utilisation plots "
                          "(label or fingerprint prefix; default: fewest cycles)")
    dse.add_argument("--save-config", metavar="FILE.toml|.json",
                     help="report: write that point's Config (for vtalab build/run --config)")
    dse.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if args.spec == "report":
        return _report(args)
    if args.results is not None:
        raise VtaError(f"a second argument must come only with 'report', not "
                       f"{args.results!r} after the spec")
    if args.retry_errors and not args.resume:
        raise VtaError("--retry-errors must come with --resume, not alone")
    if args.jobs < 1:
        raise VtaError(f"--jobs must be at least 1, not {args.jobs}")
    from vtalab.dse.report import load_records, write_report
    from vtalab.dse.spec import load_spec
    from vtalab.dse.sweep import run_sweep
    spec = load_spec(args.spec)
    spec.path = args.spec
    out = Path(args.out or f"dse-{spec.name}")
    where = f"Dask {args.scheduler}" if args.scheduler else f"{args.jobs} process(es)"
    print(f"sweep {spec.name}: {spec.strategy}, {len(spec.sweep)} fields, "
          f"{spec.grid_size} grid points, budget {spec.budget}, {len(spec.workloads)} "
          f"workload(s), cycles from {spec.cycles}, area from {spec.area_flow}; {where}")
    summary = run_sweep(spec, out, jobs=args.jobs, scheduler=args.scheduler,
                        resume=args.resume, progress=not args.quiet,
                        retry_errors=args.retry_errors)
    print(f"{summary.evaluated} points evaluated, {summary.skipped} already in the log, "
          f"{summary.rejected} rejected, {len(summary.failed)} failed; "
          f"{summary.records} records in {summary.results} ({summary.seconds:.0f} s)")
    for label, error in summary.failed:
        print(f"  failed (rerun with --resume): {label}: {error}")
    paths, text = write_report(load_records(summary.results), out, spec.report["x"],
                               spec.report["y"], spec.report["workload"])
    print(text)
    print("wrote " + ", ".join(str(p) for p in paths.values()))
    return 1 if summary.failed else 0


def _report(args: argparse.Namespace) -> int:
    if args.results is None:
        raise VtaError("report must be given a results file (vtalab dse report "
                       "RESULTS.jsonl), not nothing")
    from vtalab.dse.report import load_records, write_report
    from vtalab.dse.spec import PARETO_X, PARETO_Y
    for name, value, allowed in (("--x", args.x, PARETO_X), ("--y", args.y, PARETO_Y)):
        if value is not None and value not in allowed:
            raise VtaError(f"{name} must be one of {list(allowed)}, not {value!r}")
    out = Path(args.out) if args.out else Path(args.results).parent
    records = load_records(args.results)
    paths, text = write_report(records, out, args.x or "dsp", args.y or "cycles",
                               args.workload, args.config)
    print(text)
    if args.save_config:
        paths["config"] = _save_config(records, args)
    print("wrote " + ", ".join(str(p) for p in paths.values()))
    return 0


def _save_config(records: list, args) -> Path:
    from vtalab.dse.report import choose_record, workload_names
    from vtalab.spec import Config
    rec = choose_record(records, args.workload or workload_names(records)[0], args.config)
    cfg = Config.from_dict(rec["config"], name=rec["label"].replace(" ", "-"))
    cfg.save(args.save_config)
    print(f"config {cfg.name} ({cfg.fingerprint()}) saved to {args.save_config}")
    return Path(args.save_config)
