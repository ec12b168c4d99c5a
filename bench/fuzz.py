"""Differential fuzzing at scale: thousands of random legal programs on the functional
simulator and the native RTL (ideal memory and random AXI back-pressure alternating).

    python bench/fuzz.py [--config tiny] [--count 5000] [--seed 0] [--save-dir DIR]

Each mismatch is shrunk to a minimal program; its disassembly is printed and, with
``--save-dir``, it is saved as a program file that ``vtalab sim --backend rtl`` replays.
Prints a table and a JSON line.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from vtalab.runtime import open_device
from vtalab.runtime.runfile import save_fuzz_program
from vtalab.sim.differential import Differential
from vtalab.spec import load_config

TIMINGS = [{}, {"pressure": 0.3, "read_latency": 4, "write_latency": 2, "seed": 5},
           {"pressure": 0.1, "read_latency": 1, "write_latency": 9, "seed": 9},
           {"pressure": 0.5, "read_latency": 12, "write_latency": 12, "seed": 3}]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--config", default="tiny")
    parser.add_argument("--count", type=int, default=5000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--max-rounds", type=int, default=6)
    parser.add_argument("--save-dir", type=Path)
    args = parser.parse_args()
    cfg = load_config(args.config)
    start = time.perf_counter()

    def progress(done, total, bad):
        if done % 250 == 0 or done == total:
            rate = done / (time.perf_counter() - start)
            print(f"  {done:>6}/{total} programs, {bad} mismatches, {rate:.0f} programs/s",
                  flush=True)

    with open_device("fsim", cfg, dram_bytes=1 << 20) as ref, \
            open_device("rtl", cfg, dram_bytes=1 << 20, cycle_limit=2_000_000,
                        echo=print) as dut:
        diff = Differential(ref, dut, TIMINGS)
        found = diff.fuzz(args.count, seed=args.seed, max_rounds=args.max_rounds,
                          progress=progress)
    seconds = time.perf_counter() - start
    for k, mismatch in enumerate(found):
        print("\n" + mismatch.report())
        if args.save_dir:
            args.save_dir.mkdir(parents=True, exist_ok=True)
            path = save_fuzz_program(args.save_dir / f"mismatch-{mismatch.program.seed}.npz",
                                     mismatch.program)
            print(f"saved {path}")
    print(f"\n{'config':<8} {'programs':>9} {'runs':>7} {'mismatches':>11} {'seconds':>8}")
    print(f"{cfg.name:<8} {args.count:>9} {diff.runs:>7} {len(found):>11} {seconds:>8.1f}")
    print(json.dumps({"config": cfg.name, "programs": args.count, "runs": diff.runs,
                      "mismatches": len(found), "seeds": [m.program.seed for m in found],
                      "seconds": round(seconds, 1)}))
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
