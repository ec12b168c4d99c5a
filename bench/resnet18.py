"""ResNet-18 end to end: compile time, functional-simulator run, RTL run, CPU fallback time.

    python bench/resnet18.py [--input-size 224] [--config default] [--no-rtl]
                             [--tuning-log LOG] [--jobs 2] [--json F]

Wall times are what the targets mean; CPU times (time.process_time) are printed next to
them because a busy machine inflates wall time. Prints a per-layer table of the offloaded layers (cycles, ideal cycles, GEMM utilisation
on the RTL backend) and a summary table against the targets, then the JSON. The model is
built in code with seeded random weights; the outputs of every backend are checked
against the int8 reference bit for bit.
"""
from __future__ import annotations

import argparse
import json
import time

import numpy as np

TARGETS = {"compile_s": 15.0, "fsim_s": 2.0, "rtl_wall_s": 10.0, "gemm_utilization": 0.90}


def _rtl_device(cfg, module):
    from vtalab.compiler.exec.runner import _dram_need
    from vtalab.runtime import open_device
    try:
        return open_device("rtl", cfg, dram_bytes=max(_dram_need(module), 64 << 20)), None
    except Exception as exc:  # a missing Verilator build or toolchain: say so, go on
        return None, f"{type(exc).__name__}: {exc}"


def _layer_rows(profile, cfg) -> list[dict]:
    rows = []
    for r in profile.accel:
        ideal = r.macs / cfg.macs_per_cycle
        rows.append({"layer": r.name, "what": r.info.get("what"), "knobs": r.info.get("knobs"),
                     "cycles": r.cycles, "ideal_cycles": int(ideal),
                     "utilization": r.utilization(cfg), "wall_s": r.seconds})
    return rows


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--input-size", type=int, default=224)
    parser.add_argument("--config", default="default")
    parser.add_argument("--no-rtl", action="store_true")
    parser.add_argument("--tuning-log", help="compile with the best records of this log")
    parser.add_argument("--jobs", type=int, default=2,
                        help="also run the accelerator steps on this many RTL processes "
                        "(checked step by step against fsim; 1: skip)")
    parser.add_argument("--join", type=int, default=None,
                        help="programs per run of accelerator layers (default: the "
                        "compiler's; 0: one per layer)")
    parser.add_argument("--json", help="also write the JSON here")
    args = parser.parse_args(argv)
    from vtalab.compiler.exec import compile_model
    from vtalab.compiler.graph import run_int8
    from vtalab.compiler.models import random_samples, resnet18
    from vtalab.runtime import open_device
    from vtalab.compiler.exec.runner import _dram_need

    shape = (1, 3, args.input_size, args.input_size)
    model = resnet18(args.input_size)
    t0, c0 = time.perf_counter(), time.process_time()
    module = compile_model(model, args.config, calibration=random_samples(shape, 4),
                           tuning_log=args.tuning_log, join=args.join)
    compile_s, compile_cpu_s = time.perf_counter() - t0, time.process_time() - c0
    cfg = module.cfg
    x = random_samples(shape, 1, seed=100)[0]
    reference = run_int8(module.graph, x)[module.outputs[0]]
    result = {"input": list(shape), "config": cfg.name, "compile_s": compile_s,
              "compile_cpu_s": compile_cpu_s,
              "compile_graph_s": module.stats["graph_seconds"],
              "compile_lower_s": module.stats["lower_seconds"],
              "tuning_log": args.tuning_log,
              "tuned_tasks": len(module.stats.get("tuning", {}).get("used", {}))}
    with open_device("fsim", cfg, dram_bytes=_dram_need(module)) as dev:
        t0 = time.perf_counter()
        first, _ = module.run(x, device=dev)
        result["fsim_first_run_s"] = time.perf_counter() - t0   # includes CPU kernel JIT
        t0, c0 = time.perf_counter(), time.process_time()
        out, fsim = module.run(x, device=dev)
        result["fsim_s"] = time.perf_counter() - t0
        result["fsim_cpu_s"] = time.process_time() - c0   # this process's CPU, all threads
    totals = fsim.totals()
    result.update(fsim_accel_s=totals["accel_seconds"], fallback_s=totals["cpu_seconds"],
                  fsim_exact=bool(np.array_equal(out[module.outputs[0]], reference)))
    rows = []
    if not args.no_rtl:
        dev, why = _rtl_device(cfg, module)
        if dev is None:
            result["rtl"] = f"unavailable ({why})"
        else:
            with dev:
                module.run(x, device=dev)  # bind + warm CPU kernels
                t0 = time.perf_counter()
                out, rtl = module.run(x, device=dev)
                result["rtl_wall_s"] = time.perf_counter() - t0
            t = rtl.totals()
            rows = _layer_rows(rtl, cfg)
            result.update(rtl_exact=bool(np.array_equal(out[module.outputs[0]], reference)),
                          rtl_cycles=t.get("accel_cycles"),
                          rtl_ideal_cycles=int(t["accel_macs"] / cfg.macs_per_cycle),
                          gemm_utilization=t.get("gemm_utilization"),
                          rtl_accel_wall_s=t["accel_seconds"], rtl_fallback_s=t["cpu_seconds"],
                          layers=rows)
            if args.jobs > 1:
                t0 = time.perf_counter()
                out, par = module.run(x, backend="rtl", jobs=args.jobs)
                result.update(rtl_jobs=args.jobs, rtl_parallel_wall_s=time.perf_counter() - t0,
                              rtl_parallel_exact=bool(np.array_equal(out[module.outputs[0]],
                                                                     reference)),
                              rtl_parallel_cycles=par.totals().get("accel_cycles"))
    _print(result, rows)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=1)
    print(json.dumps({k: v for k, v in result.items() if k != "layers"}, indent=1))
    return result


def _print(result: dict, rows: list[dict]) -> None:
    if rows:
        print(f"{'layer':<12} {'shape':<34} {'cycles':>12} {'ideal':>12} {'util':>6}")
        for r in rows:
            util = "-" if r["utilization"] is None else f"{r['utilization']:.1%}"
            print(f"{r['layer']:<12} {str(r['what'])[:34]:<34} {r['cycles'] or 0:>12,} "
                  f"{r['ideal_cycles']:>12,} {util:>6}")
        print()
    print(f"{'metric':<34} {'value':>14} {'target':>10}")
    lines = [("compile time (s)", result["compile_s"], "< 15"),
             ("compile CPU time (s)", result["compile_cpu_s"], ""),
             ("fsim run (s)", result["fsim_s"], "< 2"),
             ("fsim run CPU time (s)", result["fsim_cpu_s"], ""),
             ("fsim first run, with JIT (s)", result["fsim_first_run_s"], ""),
             ("fallback (CPU) time (s)", result["fallback_s"], ""),
             ("fsim bit-exact vs int8 ref", result["fsim_exact"], "True")]
    if "rtl_wall_s" in result:
        lines += [("RTL wall (s)", result["rtl_wall_s"], "< 10"),
                  ("RTL accelerator cycles", result["rtl_cycles"], ""),
                  ("ideal cycles (MACs / array)", result["rtl_ideal_cycles"], ""),
                  ("GEMM utilisation, offloaded", result["gemm_utilization"], ">= 0.90"),
                  ("RTL bit-exact vs int8 ref", result["rtl_exact"], "True")]
    if "rtl_parallel_wall_s" in result:
        lines += [(f"RTL wall, {result['rtl_jobs']} processes (s)",
                   result["rtl_parallel_wall_s"], "< 5"),
                  ("RTL cycles, steps apart", result["rtl_parallel_cycles"], ""),
                  ("RTL parallel bit-exact", result["rtl_parallel_exact"], "True")]
    elif "rtl" in result:
        lines.append(("RTL", result["rtl"], ""))
    for name, value, target in lines:
        shown = f"{value:,.3f}" if isinstance(value, float) else \
            (f"{value:,}" if isinstance(value, int) and not isinstance(value, bool) else str(value))
        print(f"{name:<34} {shown:>14} {target:>10}")


if __name__ == "__main__":
    main()
