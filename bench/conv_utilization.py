"""GEMM utilisation of every ResNet-18 conv layer after the first, 1 vs 2 virtual threads.

    python bench/conv_utilization.py [--config default] [--tuning-log LOG] [--json F]

For each distinct layer shape and thread count the knobs are the cost model's first
choice among the points of the conv2d template with that thread count, or, with
``--tuning-log``, the log's best such record (`vtalab tune` / bench/tune.py write
them). Every run is on the RTL backend and checked bit for bit against numpy. Prints a
table, then one JSON line. Utilisation = ideal cycles (MACs / (BATCH*BLOCK_IN*BLOCK_OUT))
/ measured cycles.
"""
from __future__ import annotations

import argparse
import json
import time

from tune import conv_tasks

TARGET_3X3 = 0.90


def measure_layer(cfg, task, vthreads, log, measurer):
    tpl = task.impl
    points = [p for p in tpl.space(task).points() if p["vthreads"] == vthreads]
    tuned = [r for r in log.for_task(task) if r["knobs"]["vthreads"] == vthreads] \
        if log is not None else []
    point = min(tuned, key=lambda r: r["cost"])["knobs"] if tuned else \
        min(points, key=lambda p: tpl.prior(task, p))
    res = measurer.measure(task, point)
    if res.error:
        raise SystemExit(f"{task} {point}: {res.error}")
    sh = tpl.shape(task)
    ideal = sh.macs // cfg.macs_per_cycle
    c, h, f, k, s = sh.channels, sh.height, sh.filters, sh.kernel, sh.stride
    return {"layer": f"{h}x{h} {c}->{f} {k}x{k}/{s}", "vthreads": vthreads,
            "knobs": str(tpl.knobs(task, point)), "cycles": int(res.cost),
            "ideal_cycles": ideal, "utilization": ideal / res.cost,
            "gemm_uop_utilization": res.detail.get("gemm_utilization")}


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default="default")
    parser.add_argument("--tuning-log", help="take each layer's knobs from this log")
    parser.add_argument("--json", help="also write the JSON here")
    args = parser.parse_args(argv)
    from vtalab.compiler.tune import TuningLog, get_measurer
    from vtalab.spec import preset
    cfg = preset(args.config)
    log = TuningLog(args.tuning_log, readonly=True) if args.tuning_log else None
    measurer = get_measurer("rtl")
    rows, t0 = [], time.perf_counter()
    for task in conv_tasks(cfg):
        pair = [measure_layer(cfg, task, vt, log, measurer) for vt in (1, 2)]
        rows.append(pair)
        _print_row(pair)
    summary = _summary(rows)
    result = {"config": cfg.name, "wall_s": time.perf_counter() - t0, **summary,
              "layers": [r for pair in rows for r in pair]}
    print(f"\n3x3 layers >= {TARGET_3X3:.0%} with 2 vthreads: {summary['target_3x3_met']} "
          f"(min {summary['min_3x3_vt2']:.1%}); vthread gain on every layer: "
          f"{summary['vthread_gain_every_layer']} (min x{summary['min_vthread_gain']:.2f})")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=1)
    print(json.dumps(result))
    return result


def _summary(rows) -> dict:
    gains = [one["cycles"] / two["cycles"] for one, two in rows]
    three = [two["utilization"] for _, two in rows if "3x3" in two["layer"]]
    cycles2 = sum(two["cycles"] for _, two in rows)
    ideal = sum(two["ideal_cycles"] for _, two in rows)
    return {"min_3x3_vt2": min(three), "target_3x3_met": min(three) >= TARGET_3X3,
            "min_vthread_gain": min(gains), "vthread_gain_every_layer": min(gains) > 1.05,
            "total_utilization_vt2": ideal / cycles2}


_HEADER = False


def _print_row(pair) -> None:
    global _HEADER
    if not _HEADER:
        print(f"{'layer':<22} {'ideal':>9} {'cycles vt1':>11} {'util':>6} {'cycles vt2':>11} "
              f"{'util':>6} {'gain':>5}  knobs (vt2)")
        _HEADER = True
    one, two = pair
    print(f"{one['layer']:<22} {one['ideal_cycles']:>9,} {one['cycles']:>11,} "
          f"{one['utilization']:>6.1%} {two['cycles']:>11,} {two['utilization']:>6.1%} "
          f"{one['cycles'] / two['cycles']:>5.2f}  {two['knobs']}", flush=True)


if __name__ == "__main__":
    main()
