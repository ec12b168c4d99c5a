"""Functional-simulator throughput on a blocked 1024x1024x1024 int8 matmul program.

Prints a table and a JSON line: simulated GEMM MACs per second and instructions per
second, next to numpy computing the same product in the same run (int32 matmul, and
float64 matmul through BLAS, which is exact for these int8 products).
"""
from __future__ import annotations

import argparse
import json
import time

import numpy as np

from vtalab.runtime import ProgramBuilder, open_device
from vtalab.runtime.workloads import BlockedMatmul, matmul_reference


def best_of(fn, repeat):
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--size", type=int, default=1024)
    parser.add_argument("--config", default="default")
    parser.add_argument("--vthreads", type=int, default=1)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    size = args.size
    rng = np.random.default_rng(0)
    a = rng.integers(-128, 128, (size, size), dtype=np.int8)
    w = rng.integers(-128, 128, (size, size), dtype=np.int8)
    bias = np.zeros(size, dtype=np.int32)
    with open_device("fsim", args.config, dram_bytes=64 << 20) as dev:
        mm = BlockedMatmul(dev.cfg, size, size, size, shift=0, vthreads=args.vthreads)
        bufs = mm.place(dev, a, w, bias)
        builder = ProgramBuilder(dev)
        start = time.perf_counter()
        mm.build(builder, bufs)
        program = builder.finish()
        build_s = time.perf_counter() - start
        counters = {}
        sim_s = best_of(lambda: counters.update(program.run(dev)), args.repeat)
        ok = np.array_equal(mm.result(bufs), matmul_reference(a, w, bias, 0))
    macs = size ** 3
    a32, w32 = a.astype(np.int32), w.astype(np.int32)
    int32_s = best_of(lambda: a32 @ w32.T, 1)
    a64, w64 = a.astype(np.float64), w.astype(np.float64)
    f64_s = best_of(lambda: a64 @ w64.T, args.repeat)
    rows = [
        ("vtalab fsim (whole program)", sim_s, macs / sim_s),
        ("numpy int32 matmul", int32_s, macs / int32_s),
        ("numpy float64 matmul (BLAS)", f64_s, macs / f64_s),
    ]
    print(f"blocked {size}x{size}x{size} int8 matmul, config {dev.cfg.name}, tiles {mm.tiles}, "
          f"{len(program)} instructions ({counters['gemm_uops']:,} GEMM micro-ops), "
          f"built in {build_s:.2f} s, result {'bit-exact' if ok else 'WRONG'}")
    print(f"{'engine':<30} {'seconds':>9} {'G MAC/s':>9}")
    for name, secs, rate in rows:
        print(f"{name:<30} {secs:9.3f} {rate / 1e9:9.2f}")
    result = {
        "bench": "fsim", "size": size, "config": dev.cfg.name, "exact": ok,
        "instructions": len(program), "gemm_uops": counters["gemm_uops"],
        "fsim_seconds": sim_s, "fsim_gmacs": macs / sim_s / 1e9,
        "fsim_insns_per_s": len(program) / sim_s,
        "numpy_int32_gmacs": macs / int32_s / 1e9, "numpy_f64_gmacs": macs / f64_s / 1e9,
        "ratio_to_int32": int32_s / sim_s, "ratio_to_blas": f64_s / sim_s,
    }
    print(f"fsim / numpy int32: {result['ratio_to_int32']:.1f}x, fsim / BLAS float64: "
          f"{result['ratio_to_blas']:.3f}x, {result['fsim_insns_per_s']:,.0f} instructions/s")
    print(json.dumps(result))


if __name__ == "__main__":
    main()
