"""From a results file to the CSV, the plots and a readable summary.

    paths, text = write_report(records, "out/", x="dsp", y="cycles", workload="resnet18")

Files: ``results.csv`` (one row per point x workload x cycle source, joined with the
point's area), ``pareto.png``, ``roofline-<workload>.png`` and
``utilization-<workload>.png`` for one config (``config``: a label or fingerprint
prefix; default the point with the fewest cycles), ``model-vs-rtl.png`` when points were
measured on RTL, and ``summary.txt`` (the table, the Pareto front, the model's error).
"""
from __future__ import annotations

import statistics
from pathlib import Path

from vtalab.spec._atomic import write_text_atomic

from . import plots
from .results import SweepLog, joined_rows, write_csv
from .spec import DseError


def load_records(path) -> list[dict]:
    return SweepLog(path, readonly=True).records


def workload_names(records: list) -> list[str]:
    return list(dict.fromkeys(r["workload"].split("#")[0] for r in records
                              if r["kind"] == "workload"))


def _source_rows(rows: list, workload: str) -> list:
    """The workload's successful rows, one per point: RTL cycles where measured."""
    best: dict = {}
    for r in rows:
        if r["workload"] != workload or r["error"] or r.get("cycles") is None:
            continue
        if r["fingerprint"] not in best or r["source"] == "rtl":
            best[r["fingerprint"]] = r
    return list(best.values())


def choose_record(records: list, workload: str, config: str | None = None) -> dict:
    """The workload's record for one config (label or fingerprint prefix), RTL first;
    without ``config`` the one with the fewest cycles."""
    recs = [r for r in records if r["kind"] == "workload" and not r["error"]
            and r["workload"].split("#")[0] == workload and r["metrics"].get("cycles")]
    if config is not None:
        recs = [r for r in recs if r["label"] == config or r["fingerprint"].startswith(config)]
        if not recs:
            raise DseError(f"--config must name a swept point of {workload} (a label or a "
                           f"fingerprint prefix), not {config!r}")
    if not recs:
        raise DseError(f"results must hold a successful record of {workload}, not none")
    rtl = [r for r in recs if r["source"] == "rtl"]
    pool = rtl if config is not None and rtl else recs
    return min(pool, key=lambda r: (r["metrics"]["cycles"], r["source"] != "rtl"))


def model_error(records: list) -> dict | None:
    """The cycle model against RTL on every point measured on both: network and layer
    errors ((model - rtl) / rtl)."""
    rtl = [r for r in records if r["kind"] == "workload" and r["source"] == "rtl"
           and not r["error"] and r["metrics"].get("model_error") is not None]
    if not rtl:
        return None
    nets = [r["metrics"]["model_error"] for r in rtl]
    layers = [(lay["cycles_model"] - lay["cycles_rtl"]) / lay["cycles_rtl"]
              for r in rtl for lay in r["layers"]
              if lay.get("cycles_rtl") and lay.get("cycles_model")]
    return {"points": len({r["fingerprint"] for r in rtl}), "records": len(rtl),
            "network_mean_abs": statistics.fmean(abs(e) for e in nets),
            "network_max_abs": max(abs(e) for e in nets),
            "network_mean": statistics.fmean(nets),
            "layers": len(layers),
            "layer_mean_abs": statistics.fmean(abs(e) for e in layers) if layers else None,
            "layer_max_abs": max(abs(e) for e in layers) if layers else None,
            "per_point": [(r["label"], r["workload"].split("#")[0], r["metrics"]["cycles"],
                           r["metrics"]["cycles_model"], r["metrics"]["model_error"])
                          for r in rtl]}


def write_report(records: list, out_dir, x: str = "dsp", y: str = "cycles",
                 workload: str | None = None, config: str | None = None) -> tuple[dict, str]:
    out_dir = Path(out_dir)
    names = workload_names(records)
    if not names:
        raise DseError("results must hold at least one workload record, not none")
    workload = workload or names[0]
    if workload not in names:
        raise DseError(f"workload must be one of {names}, not {workload!r}")
    rows = joined_rows(records)
    paths = {"csv": write_csv(rows, out_dir / "results.csv")}
    points = _source_rows(rows, workload)
    front = []
    if any(r.get(x) is not None for r in points):
        front = plots.pareto_front([r for r in points if r.get(x) is not None], x, y)
        paths["pareto"] = plots.pareto(points, x, y, out_dir / "pareto.png",
                                       f"{workload}: {plots.AXIS[y]} vs {plots.AXIS[x]}",
                                       _capacity(records, x))
    chosen = choose_record(records, workload, config)
    title = f"{workload} on {chosen['label']} ({chosen['source']})"
    paths["roofline"] = plots.roofline(chosen, out_dir / f"roofline-{workload}.png", title)
    paths["utilization"] = plots.utilization(chosen, out_dir / f"utilization-{workload}.png",
                                             title)
    err = model_error(records)
    if err is not None:
        rtl = [r for r in records if r["kind"] == "workload" and r["source"] == "rtl"
               and not r["error"] and r["metrics"].get("cycles_model")]
        paths["model_vs_rtl"] = plots.model_vs_rtl(rtl, out_dir / "model-vs-rtl.png",
                                                   "cycle model vs RTL")
    text = summary_text(records, points, front, x, y, workload, chosen, err)
    write_text_atomic(out_dir / "summary.txt", text + "\n")
    paths["summary"] = out_dir / "summary.txt"
    return paths, text


def _builds(records: list) -> list[str]:
    """One line per placed-and-routed point: its bitstream and whether it met the clock."""
    lines = []
    for rec in records:
        m = rec["metrics"]
        if rec["kind"] != "area" or rec["error"] or not m.get("bitstream"):
            continue
        clock = rec["config"]["clock_mhz"]
        met = "met" if m["fmax_mhz"] >= clock else "NOT met"
        lines.append(f"{rec['label']}: {m['lut']:,} LUTs, {m['ff']:,} FFs, {m['dsp']} DSPs, "
                     f"{m['bram']} BRAMs, Fmax {m['fmax_mhz']:.1f} MHz ({clock:g} MHz {met}); "
                     f"bitstream {m['bitstream']}")
    return lines


def _capacity(records: list, x: str):
    """(capacity, text) of the sweep's board for the area axis, or None."""
    from vtalab.fpga.boards import BOARDS
    boards = {r["metrics"].get("board") for r in records if r["kind"] == "area"}
    if len(boards) != 1 or next(iter(boards)) not in BOARDS:
        return None
    board = BOARDS[next(iter(boards))]
    return board.capacity[x], f"{board.name}: {board.capacity[x]:,} {x.upper()}s"


def _fmt(v, spec: str = ",") -> str:
    if v is None:
        return "-"
    return format(v, spec)


def summary_text(records, points, front, x, y, workload, chosen, err) -> str:
    keys = {r["fingerprint"] for r in front}
    lines = [f"{len(points)} points of {workload}; Pareto front on {y} vs {x}: "
             f"{len(front)} (*)"]
    head = (f"  {'':1} {'point':<28} {'src':<5} {'cycles':>13} {'util':>5} {'GOPS':>7} "
            f"{'DRAM MB':>8} {'DSP':>5} {'BRAM':>5} {'LUT':>7} {'Fmax':>6} {'fits':>4}")
    lines += [head, "  " + "-" * (len(head) - 2)]
    sign = -1 if y == "gops" else 1
    for r in sorted(points, key=lambda r: sign * (r.get(y) or 0)):
        lines.append(f"  {'*' if r['fingerprint'] in keys else ' '} {r['label'][:28]:<28} "
                     f"{r['source']:<5} {_fmt(r['cycles']):>13} {r['utilization']:>5.0%} "
                     f"{_fmt(r['gops'], '.2f'):>7} {r['dram_bytes'] / 1e6:>8.2f} "
                     f"{_fmt(r.get('dsp')):>5} {_fmt(r.get('bram')):>5} "
                     f"{_fmt(r.get('lut')):>7} {_fmt(r.get('fmax_mhz'), '.1f'):>6} "
                     f"{_fits(r.get('fits')):>4}")
    failed = [r for r in records if r["error"]]
    if failed:
        lines.append(f"{len(failed)} records with errors (rejected points or failed runs):")
        for r in failed[:8]:
            lines.append(f"  {r['label'] or r['point']}: {r['error'][:150]}")
    m = chosen["metrics"]
    lines.append(f"chosen for the roofline: {chosen['label']} ({chosen['fingerprint']}): "
                 f"{m['cycles']:,} cycles, {m['utilization']:.1%} utilisation, "
                 f"{m['gops']:.2f} GOPS at {chosen['config']['clock_mhz']:g} MHz")
    lines += _builds(records)
    if err is not None:
        lines.append(f"cycle model vs RTL on {err['points']} points: network error mean "
                     f"|{err['network_mean_abs']:.1%}|, max |{err['network_max_abs']:.1%}|; "
                     f"{err['layers']} layers: mean |{_pct(err['layer_mean_abs'])}|, max "
                     f"|{_pct(err['layer_max_abs'])}|")
    return "\n".join(lines)


def _fits(v) -> str:
    return "-" if v is None else ("yes" if v else "no")


def _pct(v) -> str:
    return "-" if v is None else f"{v:.1%}"
