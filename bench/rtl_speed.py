"""Simulated cycles per second of the native RTL backend next to the cocotb bench, and
the native model's instructions per simulated cycle (callgrind).

All run the same GEMM-heavy program (a blocked int8 matmul, >= 1 M cycles on
``default``) on the same Verilog in the same run. Prints a table and a JSON line.

    python bench/rtl_speed.py [--config default] [--size M K N] [--cocotb-cycles N]
                              [--no-cocotb] [--callgrind-cycles N]

``--cocotb-cycles`` stops the (slow) cocotb run after N cycles: its rate is measured on
that prefix of the program (0 = run it to the end). ``--callgrind-cycles N`` (default 0: skip)
runs the first N cycles under valgrind's callgrind, counting only the instructions in the
RTL library's own code (the model, its AXI memory and the harness), on a build for
x86-64-v3 (valgrind does not run AVX-512): the number a simulator change should lower,
unlike wall time not moved by other load on the machine.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
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


CALLGRIND_ARCH = "x86-64-v3"


def run_callgrind(cfg, program_file, cycles, dram_bytes):
    """Instructions per simulated cycle of the native model over the first ``cycles``."""
    if shutil.which("valgrind") is None:
        return {"error": "callgrind unavailable: valgrind is not on PATH"}
    from vtalab.sim.rtl.build import library
    from vtalab.spec.errors import SimError
    try:
        lib = library(cfg, arch=CALLGRIND_ARCH, echo=print)
    except SimError as exc:                         # e.g. not an x86-64 host
        return {"error": f"callgrind build unavailable: {exc}"}
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "callgrind.out"
        proc = subprocess.run(
            ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", sys.executable,
             __file__, "--callgrind-child", str(program_file), str(lib), str(cycles),
             str(dram_bytes)], capture_output=True, text=True)
        if proc.returncode != 0 or not out.exists():
            last = (proc.stderr.strip().splitlines() or [""])[-1]
            return {"error": f"callgrind run failed (exit {proc.returncode}): {last}"}
        spent = object_instructions(out.read_text(), str(lib))
    if not spent:
        return {"error": f"callgrind recorded no instructions in {lib}"}
    ran = json.loads(proc.stdout.strip().splitlines()[-1])["cycles"]
    return {"cycles": ran, "instructions": spent,
            "instructions_per_cycle": round(spent / ran), "arch": CALLGRIND_ARCH}


def object_instructions(profile: str, obj: str) -> int:
    """Instructions executed in the code of shared object ``obj`` (its functions' own
    costs) in a callgrind profile: the model and its harness, not Python's start-up."""
    names, current, total, skip_next = {}, None, 0, False
    target = os.path.realpath(obj)
    for line in profile.splitlines():
        named = re.match(r"(c?ob)=\((\d+)\)(?: (.*))?$", line)
        if named:
            if named.group(3):
                names[named.group(2)] = named.group(3)
            if named.group(1) == "ob":
                current = os.path.realpath(names.get(named.group(2), ""))
            continue
        if line.startswith("calls="):
            skip_next = True                        # the next cost line is the callee's
            continue
        cost = re.match(r"[+-]?\d+ (\d+)$|\* (\d+)$", line)
        if cost:
            if not skip_next and current == target:
                total += int(cost.group(1) or cost.group(2))
            skip_next = False
    return total


def callgrind_child(program_file, lib, cycles, dram_bytes) -> None:
    """Under valgrind: the program on the model in ``lib`` for at most ``cycles`` cycles."""
    from vtalab.runtime.runfile import load_program
    from vtalab.sim.rtl.model import RtlModel, RtlWatchdog
    cfg, image, insn_addr, count = load_program(program_file)
    model = RtlModel(cfg, int(dram_bytes), lib_path=lib)
    model.dram[:image.size] = image
    start = model.cycle
    try:
        model.run(insn_addr, count, cycle_limit=int(cycles))
    except RtlWatchdog:                             # the prefix asked for has run
        pass
    print(json.dumps({"cycles": model.cycle - start}))
    model.close()


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
    if len(sys.argv) == 6 and sys.argv[1] == "--callgrind-child":
        callgrind_child(*sys.argv[2:])
        return 0
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--config", default="default")
    parser.add_argument("--size", type=int, nargs=3, default=(512, 1024, 512))
    parser.add_argument("--cocotb-cycles", type=int, default=100_000)
    parser.add_argument("--no-cocotb", action="store_true")
    parser.add_argument("--callgrind-cycles", type=int, default=0,
                        help="also count instructions per cycle over this many (0: skip)")
    args = parser.parse_args()
    cfg = load_config(args.config)
    dram_bytes = 64 << 20
    image, insn_addr, count = build_image(cfg, args.size, dram_bytes)
    native = run_native(cfg, image, insn_addr, count, dram_bytes)
    rows = {"native": native}
    with tempfile.TemporaryDirectory() as tmp:
        program_file = save_program(Path(tmp) / "program.npz", cfg, image, insn_addr, count)
        if not args.no_cocotb:
            rows["cocotb"] = run_cocotb(cfg, program_file, args.cocotb_cycles)
        if args.callgrind_cycles:
            rows["callgrind"] = run_callgrind(cfg, program_file, args.callgrind_cycles,
                                              dram_bytes)
    report(cfg, args.size, count, rows)
    return 0


def report(cfg, size, count, rows) -> None:
    print(f"\nconfig {cfg.name}, matmul {size[0]}x{size[1]}x{size[2]} int8, {count} "
          f"instructions, double-buffered")
    print(f"{'backend':<8} {'cycles':>12} {'seconds':>9} {'cycles/s':>12}")
    result = {"config": cfg.name, "size": list(size), "instructions": count}
    for name, row in rows.items():
        result[name] = row
        if "error" in row:
            print(f"{name:<8} {row['error']}")
            continue
        if name == "callgrind":
            print(f"{name:<8} {row['cycles']:>12,} {row['instructions_per_cycle']:,} "
                  f"instructions per simulated cycle ({row['arch']} build, RTL library)")
            continue
        rate = row["cycles"] / row["seconds"]
        row["cycles_per_s"] = round(rate)
        print(f"{name:<8} {row['cycles']:>12,} {row['seconds']:>9.2f} {rate:>12,.0f}")
    if "cycles_per_s" in rows.get("cocotb", {}):
        result["speedup"] = round(rows["native"]["cycles_per_s"] / rows["cocotb"]["cycles_per_s"],
                                  1)
        print(f"native / cocotb: {result['speedup']}x")
    print(json.dumps(result))


if __name__ == "__main__":
    sys.exit(main())
