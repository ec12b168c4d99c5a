"""Draw the RTL timeline of a double-buffered blocked matmul (docs/rtl-timeline-matmul.png).

    python bench/rtl_timeline.py [--config default] [--size 64 256 128] [--vthreads 2]

Writes the PNG Gantt chart and the Perfetto trace (open it at ui.perfetto.dev), prints
cycles, GEMM utilisation and how many cycles loads overlapped GEMMs, plus a JSON line.
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from vtalab.runtime import ProgramBuilder, open_device
from vtalab.runtime.workloads import BlockedMatmul, matmul_reference

DOCS = Path(__file__).resolve().parents[1] / "docs"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--config", default="default")
    parser.add_argument("--size", type=int, nargs=3, default=(256, 512, 256))
    parser.add_argument("--vthreads", type=int, default=2)
    parser.add_argument("--out", type=Path, default=DOCS / "rtl-timeline-matmul.png")
    args = parser.parse_args()
    m, k, n = args.size
    rng = np.random.default_rng(0)
    a = rng.integers(-128, 128, (m, k), dtype=np.int8)
    w = rng.integers(-128, 128, (n, k), dtype=np.int8)
    bias = rng.integers(-1000, 1000, n, dtype=np.int32)
    with open_device("rtl", args.config, timeline=True, echo=print) as dev:
        mm = BlockedMatmul(dev.cfg, m, k, n, shift=8, vthreads=args.vthreads)
        bufs = mm.place(dev, a, w, bias)
        builder = ProgramBuilder(dev)
        mm.build(builder, bufs)
        program = builder.finish()
        counters = program.run(dev)
        assert np.array_equal(mm.result(bufs), matmul_reference(a, w, bias, 8))
        timeline = dev.last_timeline
    title = (f"RTL timeline: {m}x{k}x{n} int8 matmul, {args.vthreads} virtual threads, "
             f"config {dev.cfg.name} — {counters['cycles']:,} cycles, GEMM utilisation "
             f"{counters['gemm_utilization']:.0%}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    timeline.plot(args.out, title=title)
    trace = timeline.save_trace(args.out.with_suffix(".json"))
    result = {"config": dev.cfg.name, "size": [m, k, n], "vthreads": args.vthreads,
              "instructions": len(program), "cycles": counters["cycles"],
              "gemm_uops": counters["gemm_uops"],
              "gemm_utilization": counters["gemm_utilization"],
              "load_gemm_overlap_cycles": timeline.overlap(), "png": str(args.out),
              "trace": str(trace)}
    print(f"{title}\nloads overlapped GEMMs for {result['load_gemm_overlap_cycles']:,} cycles")
    print(json.dumps(result))


if __name__ == "__main__":
    main()
