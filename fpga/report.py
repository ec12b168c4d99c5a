"""Build reports: nextpnr's ``--report`` JSON turned into utilisation, Fmax and a summary.

The machine-readable report (``report.json``) holds, per resource, ``used`` and
``available``; per clock, ``achieved_mhz`` and ``constraint_mhz``; plus the board, the
config, the estimate made before the build, build times and the peak GOPS
(MACs per cycle x 2 x the lower of achieved Fmax and the clock the PLL makes), and the
slowest register endpoints of the design: nextpnr's detailed timing report gives the latest
arrival at every flip-flop, DSP and block-RAM input, grouped here by the source line that
made the register (the worst path names only one; these are the next ones to fix).
"""
from __future__ import annotations

import json
from pathlib import Path, PurePath

from vtalab.spec import Config
from vtalab.spec._atomic import write_text_atomic

from .errors import FpgaError

# nextpnr-ecp5 cell types -> report names.
ECP5_CELLS = {"lut": "TRELLIS_COMB", "ff": "TRELLIS_FF", "dsp": "MULT18X18D",
              "bram": "DP16KD", "lutram": "TRELLIS_RAMW", "io": "TRELLIS_IO", "pll": "EHXPLLL"}


def parse_nextpnr_report(path: "str | Path") -> dict:
    """{"utilization": {name: {used, available}}, "fmax": {clock: {achieved_mhz, ...}}}."""
    path = Path(path)
    try:
        raw = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise FpgaError(f"nextpnr report {path} must be readable JSON, not: {exc}") from None
    if "utilization" not in raw or "fmax" not in raw:
        raise FpgaError(f"nextpnr report {path} must have utilization and fmax, "
                        f"not keys {sorted(raw)}")
    util = {}
    for name, cell in ECP5_CELLS.items():
        entry = raw["utilization"].get(cell, {"used": 0, "available": 0})
        util[name] = {"used": int(entry["used"]), "available": int(entry["available"])}
    fmax = {}
    for clock, entry in raw["fmax"].items():
        fmax[_clock_name(clock)] = {"achieved_mhz": round(float(entry["achieved"]), 2),
                                    "constraint_mhz": round(float(entry["constraint"]), 2)}
    paths = [critical_path(entry) for entry in raw.get("critical_paths", [])]
    return {"utilization": util, "fmax": fmax, "critical_paths": paths,
            "detailed_net_timings": raw.get("detailed_net_timings", [])}


def slowest_endpoints(nets: list, cell_sources: dict, count: int = 20) -> list:
    """The latest-arriving register inputs (nextpnr's detailed net timings), one row per
    source line of the receiving register: worst arrival in ns, how many endpoints
    (bits) arrive within 90% of it, and the input port of the worst (DI data, CE clock
    enable, LSR set/reset, M the slice's direct input; block RAM/DSP pin names)."""
    groups = {}
    for net in nets:
        for end in net.get("endpoints", []):
            if "async" in end.get("event", "") or not end.get("delay"):
                continue
            arrival = max(end["delay"]) if isinstance(end["delay"], list) else end["delay"]
            where = _where(end["cell"], cell_sources)
            group = groups.setdefault(where, {"where": where, "arrival_ns": -1.0,
                                              "times": []})
            if arrival > group["arrival_ns"]:
                group["arrival_ns"], group["port"] = arrival, end.get("port", "")
            group["times"].append(arrival)
    rows = sorted(groups.values(), key=lambda g: -g["arrival_ns"])[:count]
    return [{"where": g["where"], "arrival_ns": round(g["arrival_ns"], 2), "port": g["port"],
             "endpoints": sum(1 for t in g["times"] if t >= 0.9 * g["arrival_ns"])}
            for g in rows]


def cell_sources(netlist_path: "str | Path") -> dict:
    """Cell name -> the source location Yosys recorded for it (its ``src`` attribute)."""
    try:
        cells = json.loads(Path(netlist_path).read_text())["modules"]["top"]["cells"]
    except (OSError, ValueError, KeyError):
        return {}
    return {name: cell.get("attributes", {}).get("src", "") for name, cell in cells.items()}


def _where(cell: str, sources: dict) -> str:
    """A source line inside the design (``hw/exec_pipe.py:163``), else the cell's name
    (block RAMs and other cells Yosys' own libraries made)."""
    src = sources.get(cell, "").split("|")[0]
    if src and "/share/" not in src:
        parts = PurePath(src.split(":")[0]).parts
        for root in ("hw", "fpga", "amaranth"):
            if root in parts:
                tail = "/".join(parts[parts.index(root):])
                return tail + ":" + src.split(":")[1].split(".")[0] if ":" in src else tail
        return src
    return cell.split("_TRELLIS")[0].split("$")[0]


def critical_path(entry: dict) -> dict:
    """Where a clock's critical path runs: end points, delays and the named nets on it."""
    steps = entry.get("path", [])
    logic = sum(s.get("delay", 0.0) for s in steps if s.get("type") != "routing")
    routing = sum(s.get("delay", 0.0) for s in steps if s.get("type") == "routing")
    nets = []
    for step in steps:
        net = step.get("net", "")
        if net and not net.startswith("$") and net not in nets:
            nets.append(net)
    return {
        "clock": _clock_name(entry.get("from", "")),
        "start": steps[0]["from"]["cell"] if steps else None,
        "end": steps[-1]["to"]["cell"] if steps else None,
        "logic_ns": round(logic, 2), "routing_ns": round(routing, 2),
        "levels": sum(1 for s in steps if s.get("type") == "logic"),
        "nets": nets[:12],
    }


def _clock_name(net: str) -> str:
    return net.replace("$glbnet$", "")


def core_clock(fmax: dict) -> "tuple[str, dict] | tuple[None, None]":
    """The accelerator's clock: the constrained clock with the highest constraint."""
    if not fmax:
        return None, None
    name = max(fmax, key=lambda k: fmax[k]["constraint_mhz"])
    return name, fmax[name]


def make_report(board, cfg: Config, nextpnr: dict, estimate, times: dict,
                clock_mhz: float) -> dict:
    clock, timing = core_clock(nextpnr["fmax"])
    achieved = timing["achieved_mhz"] if timing else None
    usable = min(achieved, clock_mhz) if achieved else None
    return {
        "board": board.name, "part": board.part, "flow": board.flow,
        "hard_dsp": board.hard_dsp, "gemm_dsps": board.gemm_dsps, "config": cfg.to_dict(),
        "fingerprint": cfg.fingerprint(),
        "block": f"{cfg.batch}x{cfg.block_in}x{cfg.block_out}",
        "macs_per_cycle": cfg.macs_per_cycle,
        "estimate": {"dsp": estimate.dsp, "bram": estimate.bram, **estimate.detail},
        "utilization": nextpnr["utilization"],
        "fmax": nextpnr["fmax"],
        "critical_paths": nextpnr.get("critical_paths", []),
        "slowest_endpoints": nextpnr.get("slowest_endpoints", []),
        "core_clock": clock,
        "clock_mhz": clock_mhz,
        # the clock nextpnr timed the core for: above clock_mhz by Board.timing_margin
        "route_target_mhz": timing["constraint_mhz"] if timing else None,
        "fmax_mhz": achieved,
        "timing_met": bool(achieved and achieved >= clock_mhz),
        "peak_gops": round(cfg.macs_per_cycle * 2 * usable / 1000, 3) if usable else None,
        "peak_gops_at_fmax": round(cfg.macs_per_cycle * 2 * achieved / 1000, 3)
        if achieved else None,
        "gops_per_dsp": _per_dsp(cfg.macs_per_cycle * 2 * usable / 1000, nextpnr)
        if usable else None,
        "times_s": times,
    }


def _per_dsp(gops: float, nextpnr: dict) -> "float | None":
    dsp = nextpnr["utilization"].get("dsp", {}).get("used")
    return round(gops / dsp, 3) if dsp else None


def _clock_line(report: dict, clock: str, entry: dict) -> str:
    wanted, target = entry["constraint_mhz"], None
    if clock == report.get("core_clock") and report.get("clock_mhz"):
        wanted = report["clock_mhz"]
        target = entry["constraint_mhz"] if entry["constraint_mhz"] > wanted + 0.05 else None
    ok = "met" if entry["achieved_mhz"] >= wanted else "FAILED"
    routed = f", placed and routed for {target:.1f} MHz" if target else ""
    return (f"  clock {clock}: {entry['achieved_mhz']:.1f} MHz achieved, {wanted:.1f} MHz "
            f"wanted ({ok}{routed})")


def summary(report: dict) -> str:
    lines = [f"{report['board']} ({report['part']}): config {report['config']['name']} "
             f"{report['block']}, {report['macs_per_cycle']} MACs/cycle, "
             f"fingerprint {report['fingerprint']}"]
    lines.append(f"  {'resource':<8} {'used':>7} {'avail':>7} {'%':>6}")
    for name, entry in report["utilization"].items():
        if not entry["available"]:
            continue
        pct = 100.0 * entry["used"] / entry["available"]
        lines.append(f"  {name:<8} {entry['used']:>7} {entry['available']:>7} {pct:>5.1f}%")
    for clock, entry in report["fmax"].items():
        lines.append(_clock_line(report, clock, entry))
    outreg = report.get("bram_output_registers")     # fpga/bram_outreg.py
    if outreg:
        lines.append(f"  block-RAM output registers: {outreg['registers']} flip-flops in "
                     f"{outreg['brams']} DP16KD")
    if report.get("seeds_tried"):                   # fpga/seeds.py
        tried = ", ".join(f"{t['seed']}: " + ("no route" if t["fmax_mhz"] is None
                                              else f"{t['fmax_mhz']:.1f}")
                          for t in report["seeds_tried"])
        lines.append(f"  placement seed {report['seed']} (MHz by seed: {tried})")
    if report.get("peak_gops") is not None:
        usable = min(report["fmax_mhz"], report["clock_mhz"])
        lines.append(f"  peak {report['peak_gops']:.2f} GOPS at {usable:.1f} MHz "
                     f"({report['peak_gops_at_fmax']:.2f} GOPS at Fmax"
                     + (f"; {report['gops_per_dsp']:.2f} GOPS per DSP used)"
                        if report.get("gops_per_dsp") else ")"))
    for path in report.get("critical_paths", []):
        if path["clock"] == report.get("core_clock") and path["start"]:
            lines.append(f"  critical path: {path['start']} -> {path['end']}, "
                         f"{path['levels']} logic levels, {path['logic_ns']:.1f} ns logic + "
                         f"{path['routing_ns']:.1f} ns routing")
    slow = report.get("slowest_endpoints", [])[:6]
    if slow:
        lines.append("  slowest register inputs: " + "; ".join(
            f"{e['arrival_ns']:.1f} ns {e['where']} ({e['endpoints']})" for e in slow))
    times = report.get("times_s", {})
    if times:
        lines.append("  build " + ", ".join(f"{k} {v:.0f} s" for k, v in times.items()))
    return "\n".join(lines)


def write_report(report: dict, out_dir: Path) -> tuple[Path, Path]:
    json_path, text_path = out_dir / "report.json", out_dir / "summary.txt"
    write_text_atomic(json_path, json.dumps(report, indent=2) + "\n")
    write_text_atomic(text_path, summary(report) + "\n")
    return json_path, text_path


def read_report(out_dir) -> dict:
    """The report.json an open-flow build wrote into ``out_dir``."""
    path = Path(out_dir) / "report.json"
    if not path.is_file():
        raise FpgaError(f"{path} must exist (an open-flow build's folder), not be missing")
    return json.loads(path.read_text())
