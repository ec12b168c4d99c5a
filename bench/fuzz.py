"""Differential fuzzing at scale: thousands of random legal programs on the functional
simulator and the native RTL (ideal memory and random AXI back-pressure alternating).

    python bench/fuzz.py [--config tiny] [--count 5000] [--seed 0] [--save-dir DIR]
    python bench/fuzz.py --illegal [--config tiny] [--count 5000] [--seed 0]

Each mismatch is shrunk to a minimal program; its disassembly is printed and, with
``--save-dir``, it is saved as a program file that ``vtalab sim --backend rtl`` replays.

``--illegal``: mutants of the legal programs (runtime/fuzz_illegal.py). The validator's,
the simulator's and the RTL's verdicts (both without the validator) must agree on each,
with zero hangs and zero crashes, and a legal program after each must still match; then
the wall time the RTL takes to report a deadlock on ``default`` is measured.
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
    parser.add_argument("--illegal", action="store_true",
                        help="mutants of legal programs: verdicts must agree")
    args = parser.parse_args()
    cfg = load_config(args.config)
    if args.illegal:
        return illegal(cfg, args)
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


def illegal(cfg, args) -> int:
    from vtalab.runtime.fuzz_illegal import IllegalFuzz

    def progress(done, total, report):
        if done % 250 == 0 or done == total:
            print(f"  {done:>6}/{total} mutants, {report.agree} agree, "
                  f"{len(report.mismatches)} mismatches, {report.hangs} hangs, "
                  f"{report.crashes} crashes", flush=True)

    with open_device("fsim", cfg, dram_bytes=1 << 20, validate=False) as ref, \
            open_device("rtl", cfg, dram_bytes=1 << 20, cycle_limit=2_000_000,
                        validate=False, echo=print) as dut:
        fuzz = IllegalFuzz(ref, dut, TIMINGS, max_rounds=min(args.max_rounds, 4))
        report = fuzz.fuzz(args.count, seed=args.seed, progress=progress)
    for text in report.mismatches[:10] + report.legal_mismatches[:10]:
        print("\n" + text)
    deadlock = deadlock_seconds()
    row = report.summary()
    print(f"\n{'config':<8} {'mutants':>8} {'agree':>7} {'mismatch':>9} {'hangs':>6} "
          f"{'crashes':>8} {'legal ok':>9} {'seconds':>8}")
    print(f"{cfg.name:<8} {row['programs']:>8} {row['agree']:>7} {row['mismatches']:>9} "
          f"{row['hangs']:>6} {row['crashes']:>8} "
          f"{row['legal_runs'] - row['legal_mismatches']:>9} {row['seconds']:>8.1f}")
    print("verdicts: " + ", ".join(f"{k} {v}" for k, v in row["verdicts"].items()))
    print(f"deadlock on default, RTL without the validator: reported in "
          f"{deadlock['seconds'] * 1000:.1f} ms wall, {deadlock['cycles']} cycles")
    print(json.dumps({"config": cfg.name, **row, "deadlock_default": deadlock}))
    return 0 if report.ok else 1


def deadlock_seconds() -> dict:
    """Wall time and cycles of a deadlocking program on the default RTL, unvalidated."""
    from vtalab.spec import Isa
    from vtalab.spec.errors import DeadlockError
    from vtalab.spec.isa import FinishInsn, GemmInsn
    cfg = load_config("default")
    with open_device("rtl", cfg, dram_bytes=1 << 20, validate=False, echo=print) as dev:
        stream = Isa(cfg).encode_program([GemmInsn(reset=True, pop_prev=True), FinishInsn()])
        buf = dev.alloc(len(stream))
        buf.write(stream)
        start = time.perf_counter()
        try:
            dev.run(buf.addr, 2)
        except DeadlockError:
            pass
        seconds = time.perf_counter() - start
        cycles = dev.model.read("cycles")
    return {"seconds": round(seconds, 4), "cycles": cycles}


if __name__ == "__main__":
    sys.exit(main())
