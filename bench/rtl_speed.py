"""Simulated cycles per second of the native RTL backend next to the cocotb bench.

Both run the same GEMM-heavy program (a blocked int8 matmul, >= 1 M cycles on
``default``) on the same Verilog in the same run. Prints a table and a JSON line.

    python bench/rtl_speed.py [--config default] [--size M K N] [--cocotb-cycles N]

``--cocotb-cycles`` stops the (slow) cocotb run after N cycles: its rate is measured on
that prefix of the program (0 = run it to the end).
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from vtalab.runtime import ProgramBuilder, open_device
from vtalab.runtime.runfile import save_program
from vtalab.runtime.workloads import BlockedMatmul
from vtalab.spec import load_config

BENCH = Path(__file__).resolve().parent


def build_image(cfg, size, dram_bytes):
    """(DRAM image, insn_addr, insn_count) of a double-buffered matmul, placed on fsim."""
    m, k, n = size
    rng = np.random.default_rng(0)
    a = rng.integers(-128, 128, (m, k), dtype=np.int8)
    w = rng.integers(-128, 128, (n, k), dtype=np.int8)
    bias = rng.integers(-1000, 1000, n, dtype=np.int32)
    with open_device("fsim", cfg, dram_bytes=dram_bytes) as dev:
        mm = BlockedMatmul(cfg, m, k, n, shift=8, vthreads=2)
        bufs = mm.place(dev, a, w, bias)
        builder = ProgramBuilder(dev)
        mm.build(builder, bufs)
        program = builder.finish()
        _, insn_addr, _ = program.place(dev)
        image = dev.sim.dram[:insn_addr + len(program.code)].copy()
    return image, insn_addr, len(program)


def run_native(cfg, image, insn_addr, count, dram_bytes):
    with open_device("rtl", cfg, dram_bytes=dram_bytes, echo=print) as dev:
        buf = dev.alloc(image.size)
        buf.write(image)
        start = time.perf_counter()
        counters = dev.run(insn_addr, count)
        seconds = time.perf_counter() - start
    return {"cycles": counters["cycles"], "seconds": seconds,
            "gemm_utilization": counters["gemm_utilization"]}


def run_cocotb(cfg, program_file, max_cycles):
    """The same program on the same Verilog under cocotb (bench/cocotb_program_tb.py)."""
    try:
        from vtalab.hw.core import Core
        from vtalab.sim.cocotb_runner import run_bench, toolchain
        toolchain()
    except Exception as exc:                        # RtlUnavailable or no amaranth
        return {"error": f"cocotb bench unavailable: {exc}"}
    result = Path(tempfile.mkdtemp()) / "cocotb.json"
    env = {"VTALAB_CONFIG": cfg.name, "VTALAB_PROGRAM": str(program_file),
           "VTALAB_RESULT": str(result), "VTALAB_MAX_CYCLES": str(max_cycles)}
    start = time.perf_counter()
    total, failed = run_bench(f"core-{cfg.name}", Core(cfg), "cocotb_program_tb", BENCH, env)
    if failed or not total:
        return {"error": f"cocotb bench failed ({failed} of {total} tests)"}
    data = json.loads(result.read_text())
    data["wall_with_build"] = time.perf_counter() - start
    return data


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--config", default="default")
    parser.add_argument("--size", type=int, nargs=3, default=(512, 1024, 512))
    parser.add_argument("--cocotb-cycles", type=int, default=100_000)
    parser.add_argument("--no-cocotb", action="store_true")
    args = parser.parse_args()
    cfg = load_config(args.config)
    dram_bytes = 64 << 20
    image, insn_addr, count = build_image(cfg, args.size, dram_bytes)
    native = run_native(cfg, image, insn_addr, count, dram_bytes)
    rows = {"native": native}
    if not args.no_cocotb:
        with tempfile.TemporaryDirectory() as tmp:
            program_file = save_program(Path(tmp) / "program.npz", cfg, image, insn_addr, count)
            rows["cocotb"] = run_cocotb(cfg, program_file, args.cocotb_cycles)
    report(cfg, args.size, count, rows)
    return 0


def report(cfg, size, count, rows) -> None:
    print(f"\nconfig {cfg.name}, matmul {size[0]}x{size[1]}x{size[2]} int8, {count} "
          f"instructions, double-buffered")
    print(f"{'backend':<8} {'cycles':>12} {'seconds':>9} {'cycles/s':>12}")
    result = {"config": cfg.name, "size": list(size), "instructions": count}
    for name, row in rows.items():
        if "error" in row:
            print(f"{name:<8} {row['error']}")
            result[name] = row
            continue
        rate = row["cycles"] / row["seconds"]
        row["cycles_per_s"] = round(rate)
        print(f"{name:<8} {row['cycles']:>12,} {row['seconds']:>9.2f} {rate:>12,.0f}")
        result[name] = row
    if "cycles_per_s" in rows.get("cocotb", {}):
        result["speedup"] = round(rows["native"]["cycles_per_s"] / rows["cocotb"]["cycles_per_s"],
                                  1)
        print(f"native / cocotb: {result['speedup']}x")
    print(json.dumps(result))


if __name__ == "__main__":
    sys.exit(main())
