"""GEMM utilisation of every ResNet-18 conv layer after the first, 1 vs 2 virtual threads.

    python bench/conv_utilization.py [--config default] [--top 3] [--no-tune] [--json F]

For each distinct layer shape and thread count the knobs come from the tuner
(compiler/tune): the cost model's ``--top`` candidates are run on the RTL backend (results
cached in the tuning log, ~/.cache/vtalab/tune/) and the fastest is reported. Every run is
checked bit for bit against the numpy reference. Prints a table, then one JSON line.
Utilisation = ideal cycles (MACs / (BATCH*BLOCK_IN*BLOCK_OUT)) / measured cycles.
"""
from __future__ import annotations

import argparse
import json
import time

# (channels, size, filters, kernel, stride, pad)
LAYERS = [(64, 56, 64, 3, 1, 1), (64, 56, 128, 3, 2, 1), (64, 56, 128, 1, 2, 0),
          (128, 28, 128, 3, 1, 1), (128, 28, 256, 3, 2, 1), (128, 28, 256, 1, 2, 0),
          (256, 14, 256, 3, 1, 1), (256, 14, 512, 3, 2, 1), (256, 14, 512, 1, 2, 0),
          (512, 7, 512, 3, 1, 1)]
TARGET_3X3 = 0.90


def measure_layer(cfg, dev, log, layer, vthreads, top, tune):
    from vtalab.compiler.topi import Conv2dShape
    from vtalab.compiler.tune import best_conv2d_knobs, conv2d_tune, rtl_measure
    c, h, f, k, s, p = layer
    sh = Conv2dShape(1, c, h, h, f, k, s, p)
    measure = rtl_measure(cfg, sh, dev)
    if tune:
        knobs = conv2d_tune(cfg, sh, vthreads, measure, log, top=top)
    else:
        knobs = best_conv2d_knobs(cfg, sh, vthreads, log=log)
    measure(knobs)                      # the reported run (checked against numpy)
    counters = measure.last
    ideal = sh.macs // cfg.macs_per_cycle
    return {"layer": f"{h}x{h} {c}->{f} {k}x{k}/{s}", "vthreads": vthreads,
            "knobs": str(knobs), "cycles": counters["cycles"], "ideal_cycles": ideal,
            "utilization": ideal / counters["cycles"],
            "gemm_uop_utilization": counters["gemm_utilization"]}


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default="default")
    parser.add_argument("--top", type=int, default=3, help="candidates measured per layer")
    parser.add_argument("--no-tune", action="store_true", help="cost model / log only")
    parser.add_argument("--json", help="also write the JSON here")
    args = parser.parse_args(argv)
    from vtalab.compiler.tune import TuningLog
    from vtalab.runtime import open_device
    from vtalab.spec import preset
    cfg = preset(args.config)
    log = TuningLog.open(cfg)
    rows, t0 = [], time.perf_counter()
    with open_device("rtl", cfg, dram_bytes=64 << 20) as dev:
        for layer in LAYERS:
            pair = [measure_layer(cfg, dev, log, layer, vt, args.top, not args.no_tune)
                    for vt in (1, 2)]
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
