"""ONNX backend node tests on vtalab's float path: pass / fail / unsupported / crash per
operator, the operators of the compiler-breadth issue apart, and the overall totals.

Each case is imported at its native opset and run on the float reference interpreter and on
the CPU kernels of the compiled float graph (numpy, and LLVM where an op has one); see
vtalab/compiler/exec/conformance.py. Cases are generated from the installed onnx once and
cached. Prints a table, then JSON (or writes it with --json).

    python bench/onnx_coverage.py [--json out.json] [--op Resize --op Gelu] [--all-ops]
"""
from __future__ import annotations

import argparse
import collections
import json
import sys
import time
import warnings

from vtalab.compiler.exec.conformance import ISSUE_OPS, STATUSES, node_cases, run_case


def run_all(ops=None, cpu_paths=("numpy", "llvm")):
    cases = node_cases()
    results = []
    for name in sorted(cases):
        if ops and cases[name].op not in ops:
            continue
        results.append(run_case(cases[name], cpu_paths))
    return results


def per_op(results) -> dict[str, dict[str, int]]:
    table: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    for r in results:
        table[r.op][r.status] += 1
    return {op: {s: counts.get(s, 0) for s in STATUSES} for op, counts in sorted(table.items())}


def totals(table: dict, ops=None) -> dict:
    out = collections.Counter()
    for op, counts in table.items():
        if ops is None or op in ops:
            out.update(counts)
    count = sum(out.values())
    return {**{s: out.get(s, 0) for s in STATUSES}, "cases": count,
            "pass_rate": round(out.get("pass", 0) / count, 4) if count else 0.0}


def print_table(table: dict, issue: dict, overall: dict, show) -> None:
    print(f"{'operator':<28}" + "".join(f"{s:>12}" for s in STATUSES))
    for op, counts in table.items():
        if show(op):
            mark = "*" if op in ISSUE_OPS else " "
            print(f"{mark}{op:<27}" + "".join(f"{counts[s]:>12}" for s in STATUSES))
    for label, row in (("* issue's operators", issue), ("all node tests", overall)):
        print(f"{label:<28}" + "".join(f"{row[s]:>12}" for s in STATUSES) +
              f"   {row['pass_rate']:.1%} pass")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", help="write the JSON report here (default: print it)")
    parser.add_argument("--op", action="append", help="only this ONNX op (repeatable)")
    parser.add_argument("--all-ops", action="store_true",
                        help="list every operator, not only those with a converter or in "
                             "the issue's list")
    parser.add_argument("--no-llvm", action="store_true", help="skip the LLVM kernels")
    args = parser.parse_args(argv)
    warnings.filterwarnings("ignore")
    start = time.perf_counter()
    results = run_all(set(args.op) if args.op else None,
                      ("numpy",) if args.no_llvm else ("numpy", "llvm"))
    seconds = time.perf_counter() - start
    table = per_op(results)
    issue, overall = totals(table, set(ISSUE_OPS)), totals(table)
    from vtalab.compiler.graph import onnx_ops
    converted = set(onnx_ops())
    print_table(table, issue, overall,
                lambda op: args.all_ops or op in converted or op in ISSUE_OPS)
    print(f"{len(results)} cases in {seconds:.1f} s")
    report = {"per_op": table, "issue_ops": issue, "all": overall, "seconds": round(seconds, 1),
              "not_passing": {r.name: {"op": r.op, "status": r.status, "detail": r.detail}
                              for r in results if r.status != "pass"}}
    text = json.dumps(report, indent=1)
    if args.json:
        with open(args.json, "w") as f:
            f.write(text)
    else:
        print(text)
    return 1 if overall["fail"] or overall["crash"] else 0


if __name__ == "__main__":
    sys.exit(main())
