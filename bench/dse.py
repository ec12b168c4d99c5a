"""Design-space exploration over ResNet-18: a cycle-model sweep, the model's error against
RTL, ECP5 resources and Fmax, and the executors' wall time per point.

    python bench/dse.py [--out bench-dse] [--input-size 224] [--no-rtl] [--no-fpga]
                        [--fpga-flow pnr|synth] [--no-executors] [--pareto-png F] [--json F]

Stage A (cycle model): the ULX3S preset's buffers with block_in x block_out x bus_bits =
{8, 16, 32} x {2, 4, 8, 16} x {64, 128} (24 configs), ResNet-18 compiled for each (tilings
by the cost model), run on the functional simulator (checked against the int8 reference),
cycles per layer from the cycle model, DSP/BRAM from the resource estimate. Run three
times into separate logs: serially, on the local process pool (2 workers) and on a Dask
LocalCluster (2 workers): wall time per point, and the three must give the same records.
Stage B (RTL): the four configs 1x{8,16}x{2,4} bus 64 (they fit the ULX3S) run on the
Verilated core too (cycles checked against the reference): the model's error per network
and per layer. Stage C (ECP5): their bus-128 versions (on the Pareto front: fewer cycles
and fewer block RAMs than bus 64) through the open flow (``pnr``: place and route, Fmax,
one build at a time; ``synth``: Yosys only). Every stage resumes from its log and the caches
(Verilator builds, synthesis/P&R results by fingerprint), so reruns only do what is new.
Prints tables, then one JSON line.
"""
from __future__ import annotations

import argparse
import json
import shutil
import time
from pathlib import Path

SHAPES = {"block_in": [8, 16, 32], "block_out": [2, 4, 8, 16], "bus_bits": [64, 128]}
RTL_SET = {"block_in": [8, 16], "block_out": [2, 4], "bus_bits": [64]}
FPGA_SET = {"block_in": [8, 16], "block_out": [2, 4], "bus_bits": [128]}


def make_spec(sweep: dict, input_size: int, cycles: str = "model", flow: str = "estimate"):
    from vtalab.dse.spec import parse_spec
    return parse_spec({
        "name": "bench-resnet18", "base": {"config": "ulx3s-85f"}, "sweep": sweep,
        "workload": [{"name": "resnet18", "model": "resnet18", "input_size": input_size}],
        "search": {"budget": 64}, "metrics": {"cycles": cycles},
        "area": {"flow": flow, "board": "ulx3s-85f"}})


def stage_a(args, out: Path) -> dict:
    """The 24-point sweep on each executor, each into a fresh log (timed from scratch);
    the records of the last are merged into the main log the other stages extend."""
    from vtalab.compiler.tune.executor import LocalExecutor, SerialExecutor
    from vtalab.compiler.tune.executor_dask import DaskExecutor
    from vtalab.dse.sweep import run_sweep
    spec = make_spec(SHAPES, args.input_size)
    runs = {"serial": SerialExecutor, "pool-2": lambda: LocalExecutor(2),
            "dask-2": lambda: DaskExecutor(n_workers=2)}
    if args.no_executors:
        runs = {"pool-2": runs["pool-2"]}
    timing = {}
    for name, make in runs.items():
        folder = out / f"exec-{name}"
        if folder.exists():
            shutil.rmtree(folder)
        start = time.perf_counter()
        with make() as ex:
            summary = run_sweep(spec, folder, executor=ex, progress=False)
        wall = time.perf_counter() - start
        n = summary.evaluated
        timing[name] = {"points": n, "wall_s": round(wall, 1),
                        "wall_per_point_s": round(wall / n, 2) if n else None,
                        "work_per_point_s": round(sum(summary.point_seconds) / n, 2)
                        if n else None, "failed": len(summary.failed)}
        print(f"  stage A on {name}: {n} points in {wall:.0f} s", flush=True)
    timing["same_records"] = _same([out / f"exec-{n}" for n in runs])
    (out / "executors.json").write_text(json.dumps(timing) + "\n")
    _merge(out / f"exec-{list(runs)[-1]}", out / "main")
    return timing


def _stable(folder: Path) -> list:
    from vtalab.dse.report import load_records
    drop = ("time", "timing", "versions")
    return sorted(json.dumps({k: v for k, v in r.items() if k not in drop}, sort_keys=True)
                  for r in load_records(folder / "results.jsonl"))


def _same(folders: list) -> bool | None:
    if len(folders) < 2:
        return None
    ref = _stable(folders[0])
    return all(_stable(f) == ref for f in folders[1:])


def _merge(source: Path, target: Path) -> None:
    from vtalab.dse.report import load_records
    from vtalab.dse.results import SweepLog
    log = SweepLog(target / "results.jsonl")
    for rec in load_records(source / "results.jsonl"):
        log.append(rec)


def stage_small(args, out: Path, sweep: dict, cycles: str, flow: str) -> None:
    from vtalab.compiler.tune.executor import SerialExecutor
    from vtalab.dse.sweep import run_sweep
    spec = make_spec(sweep, args.input_size, cycles, flow)
    start = time.perf_counter()
    summary = run_sweep(spec, out / "main", executor=SerialExecutor(), resume=True,
                        retry_errors=True)
    print(f"  {cycles} / {flow}: {summary.evaluated} points in "
          f"{time.perf_counter() - start:.0f} s", flush=True)


def tables(out: Path, args) -> dict:
    from vtalab.dse.report import load_records, model_error, write_report
    from vtalab.dse.results import joined_rows
    records = load_records(out / "main" / "results.jsonl")
    paths, text = write_report(records, out / "main", "dsp", "cycles", "resnet18")
    print(text)
    if args.pareto_png and "pareto" in paths:
        shutil.copyfile(paths["pareto"], args.pareto_png)
    err = model_error(records)
    fpga = _fpga_rows(records)
    if fpga:
        print(f"\n{'config':<22} {'flow':<6} {'LUT':>7} {'FF':>7} {'DSP':>4} {'BRAM':>4} "
              f"{'Fmax':>6} {'GOPS@clk':>8} {'GOPS@Fmax':>9} {'GOPS/DSP':>8}")
        for r in fpga:
            print(f"{r['label']:<22} {r['area_flow']:<6} {r['lut']:>7,} {r['ff']:>7,} "
                  f"{r['dsp']:>4} {r['bram']:>4} {_f(r['fmax_mhz'], '.1f'):>6} "
                  f"{_f(r['gops'], '.2f'):>8} {_f(r['gops_at_fmax'], '.2f'):>9} "
                  f"{_f(r['gops_per_dsp'], '.3f'):>8}")
    rows = [{k: r.get(k) for k in ("label", "source", "cycles", "utilization", "gops",
                                   "dram_bytes", "dsp", "bram", "fits")}
            for r in joined_rows(records) if r["workload"] == "resnet18" and not r["error"]]
    return {"rows": rows, "model_error": err, "fpga": fpga,
            "points": len({r["fingerprint"] for r in records if r["kind"] == "workload"})}


def _fpga_rows(records) -> list:
    from vtalab.dse.results import joined_rows
    rows = [r for r in joined_rows(records) if r["area_flow"] in ("synth", "pnr")
            and r["source"] == "model" and not r["error"]]
    keep = ("label", "area_flow", "lut", "ff", "dsp", "bram", "fmax_mhz", "gops",
            "gops_per_dsp", "gops_at_fmax", "cycles")
    return [{k: r.get(k) for k in keep} for r in rows]


def _f(v, spec):
    return "-" if v is None else format(v, spec)


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="bench-dse")
    parser.add_argument("--input-size", type=int, default=224)
    parser.add_argument("--no-rtl", action="store_true")
    parser.add_argument("--no-fpga", action="store_true")
    parser.add_argument("--fpga-flow", default="pnr", choices=["pnr", "synth"])
    parser.add_argument("--no-executors", action="store_true",
                        help="stage A on the process pool only (no serial/Dask timing)")
    parser.add_argument("--no-sweep", action="store_true",
                        help="skip stage A (its records are in OUT/main already)")
    parser.add_argument("--pareto-png", help="copy the Pareto plot here")
    parser.add_argument("--json", help="also write the JSON here")
    args = parser.parse_args(argv)
    out = Path(args.out)
    result = {"input": [1, 3, args.input_size, args.input_size]}
    if not args.no_sweep:
        print("stage A: cycle-model sweep (24 configs)", flush=True)
        result["executors"] = stage_a(args, out)
    elif (out / "executors.json").exists():
        result["executors"] = json.loads((out / "executors.json").read_text())
    if not args.no_rtl:
        print("stage B: RTL on 4 configs", flush=True)
        stage_small(args, out, RTL_SET, "rtl", "estimate")
    if not args.no_fpga:
        print(f"stage C: ECP5 {args.fpga_flow} of 4 configs", flush=True)
        stage_small(args, out, FPGA_SET, "model", args.fpga_flow)
    result.update(tables(out, args))
    ex = result.get("executors", {})
    print(f"\n{'executor':<8} {'points':>6} {'wall s':>7} {'wall/point s':>12} "
          f"{'work/point s':>12}")
    for name in ("serial", "pool-2", "dask-2"):
        if name in ex:
            e = ex[name]
            print(f"{name:<8} {e['points']:>6} {e['wall_s']:>7} "
                  f"{_f(e['wall_per_point_s'], '.2f'):>12} "
                  f"{_f(e['work_per_point_s'], '.2f'):>12}")
    print(f"same records on every executor: {ex.get('same_records')}")
    text = json.dumps(result, default=str)
    print(text)
    if args.json:
        Path(args.json).write_text(text + "\n")
    return result


if __name__ == "__main__":
    main()
