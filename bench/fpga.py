"""FPGA benchmark: build time, utilisation, Fmax and peak GOPS of the open-flow boards.

    python bench/fpga.py                       # every open-flow board preset + ULX3S shapes
    python bench/fpga.py --boards ulx3s-85f --shapes 1x16x8 2x8x8 --reuse
    python bench/fpga.py --boards ulx3s-85f --shapes --seeds 1 2 3   # Fmax per seed
    python bench/fpga.py --boards --shapes 1x16x8 --placer static --no-timing-ripup
    python bench/fpga.py --boards --shapes 1x16x8 --timing-margin 0 --seeds 1 2 3

For each open-toolchain board preset, and for a few block shapes on the ULX3S-85F (same
buffers, different batch x block_in x block_out), runs the real YoWASP build and prints a
table plus JSON (``--json``). Peak GOPS = MACs/cycle x 2 x min(Fmax, PLL clock). A shape
that cannot fit is reported with the early check's message instead of a build.
``--reuse`` takes an existing report.json of the same config fingerprint instead of
rebuilding. ``--seeds`` places and routes each build's netlist again with every further
seed (fpga.build.place_and_route_again: Yosys once) and reports Fmax per seed ("no route"
where nextpnr fails on that placement); the row's Fmax and GOPS are the first seed's.
``--timing-margin`` sets the fraction nextpnr over-constrains the clock by (Board.timing_margin).
``--lut-multipliers`` builds the GEMM products past the part's DSPs from LUTs. Builds are
CPU-heavy: run one benchmark at a time.
"""
from __future__ import annotations

import argparse
import json
import sys
from dataclasses import replace
from pathlib import Path

from vtalab.fpga import BOARDS, ResourceError, get_board
from vtalab.fpga.boards import PLACERS
from vtalab.fpga.build import build_board, place_and_route_again
from vtalab.fpga.errors import PlaceRouteError
from vtalab.spec._atomic import write_text_atomic

DEFAULT_SHAPES = ("1x16x4", "1x16x8", "1x16x16")


def shape_config(board, shape: str, overrides: "dict | None" = None):
    batch, block_in, block_out = (int(v) for v in shape.split("x"))
    extra = "".join(f"-{k.split('_')[-2] if k.count('_') > 1 else k}{v}"
                    for k, v in (overrides or {}).items())
    return board.cfg().replace(batch=batch, block_in=block_in, block_out=block_out,
                               name=f"{board.name}-{shape}{extra}", **(overrides or {}))


def one(board, cfg, out_root: Path, reuse: bool, echo, seeds=(1,)) -> dict:
    out_dir = out_root / cfg.name
    try:
        first = _built(board, cfg, out_dir, reuse, echo, seeds[0])
    except ResourceError as exc:
        echo(f"{cfg.name}: {exc}")
        return {"board": board.name, "config": cfg.name,
                "block": f"{cfg.batch}x{cfg.block_in}x{cfg.block_out}",
                "macs": cfg.macs_per_cycle, "fits": False, "reason": str(exc)}
    return dict(row(first), seeds=[_seed_entry(first)] + [
        _again_entry(cfg, out_dir, seed, reuse, echo, board) for seed in seeds[1:]])


def _again_entry(cfg, out_dir: Path, seed: int, reuse: bool, echo, board) -> dict:
    """One further seed's entry; a seed nextpnr fails on is recorded, not fatal."""
    try:
        return _seed_entry(_again(cfg, out_dir, seed, reuse, echo, board))
    except PlaceRouteError as exc:
        echo(f"{cfg.name} seed {seed}: place and route failed")
        return {"seed": seed, "fmax_mhz": None, "timing_met": False, "build_s": None,
                "error": exc.reason}


def _seed_entry(report: dict) -> dict:
    return {"seed": report.get("seed", 1), "fmax_mhz": report["fmax_mhz"],
            "timing_met": report["timing_met"], "build_s": report["times_s"].get("total")}


def _built(board, cfg, out_dir: Path, reuse: bool, echo, seed: int) -> dict:
    cached = out_dir / "report.json"
    if reuse and cached.exists():
        report = json.loads(cached.read_text())
        if report.get("fingerprint") == cfg.fingerprint() and report.get("seed", 1) == seed \
                and _same_options(report, board):
            echo(f"{cfg.name}: reusing {cached}")
            return report
    return build_board(board, out_dir=out_dir, cfg=cfg, progress=echo, seed=seed)


def _same_options(report: dict, board) -> bool:
    """Whether a cached report was placed and routed as asked (older ones: the defaults)."""
    return (report.get("placer", "heap"), report.get("timing_ripup", True)) == \
        (board.placer, board.timing_ripup) and \
        abs(_route_target(report) - board.route_target_mhz(report["clock_mhz"])) < 0.05


def _route_target(report: dict) -> float:
    """The clock nextpnr timed the build for (reports before the timing margin: the clock)."""
    return report.get("route_target_mhz") or report["clock_mhz"]


def _again(cfg, out_dir: Path, seed: int, reuse: bool, echo, board) -> dict:
    """The build's netlist placed and routed with another seed (in ``out_dir/seed-N``)."""
    seed_dir = out_dir / f"seed-{seed}"
    cached = seed_dir / "report.json"
    if reuse and cached.exists():
        report = json.loads(cached.read_text())
        if report.get("fingerprint") == cfg.fingerprint() and report.get("seed") == seed \
                and _same_options(report, board):
            echo(f"{cfg.name} seed {seed}: reusing {cached}")
            return report
    return place_and_route_again(out_dir, seed, seed_dir, progress=echo, cfg=cfg)


def row(report: dict) -> dict:
    util = report["utilization"]
    return {
        "board": report["board"], "config": report["config"]["name"], "block": report["block"],
        "macs": report["macs_per_cycle"], "fits": True,
        **{f"{k}_used": util[k]["used"] for k in ("lut", "ff", "dsp", "bram")},
        **{f"{k}_avail": util[k]["available"] for k in ("lut", "ff", "dsp", "bram")},
        "est_dsp": report["estimate"]["dsp"], "est_bram": report["estimate"]["bram"],
        "lut_products": report["estimate"].get("lut_products", 0),
        "clock_mhz": report["clock_mhz"], "fmax_mhz": report["fmax_mhz"],
        "timing_met": report["timing_met"], "peak_gops": report["peak_gops"],
        "peak_gops_at_fmax": report["peak_gops_at_fmax"],
        "build_s": report["times_s"].get("total"), "placer": report.get("placer", "heap"),
        "route_target_mhz": _route_target(report),
    }


def table(rows: list[dict]) -> str:
    head = (f"{'config':<22} {'block':>7} {'MACs':>5} {'LUT':>13} {'FF':>13} {'DSP':>9} "
            f"{'BRAM':>9} {'Fmax':>7} {'clock':>6} {'P&R at':>6} {'met':>4} {'GOPS':>6} "
            f"{'GOPS/DSP':>8} "
            f"{'build':>7}  Fmax per seed")
    lines = [head, "-" * len(head)]
    for r in rows:
        if not r["fits"]:
            lines.append(f"{r['config']:<22} {r['block']:>7} {r['macs']:>5}  does not fit: "
                         f"{r['reason'].split(': ', 1)[-1][:80]}")
            continue
        pct = {k: 100 * r[f"{k}_used"] / r[f"{k}_avail"] for k in ("lut", "ff", "dsp", "bram")}
        lines.append(
            f"{r['config']:<22} {r['block']:>7} {r['macs']:>5} "
            f"{r['lut_used']:>6} ({pct['lut']:>3.0f}%) {r['ff_used']:>6} ({pct['ff']:>3.0f}%) "
            f"{r['dsp_used']:>3}/{r['dsp_avail']:<5} {r['bram_used']:>3}/{r['bram_avail']:<5} "
            f"{r['fmax_mhz']:>7.1f} {r['clock_mhz']:>6.1f} {r['route_target_mhz']:>6.1f} "
            f"{'yes' if r['timing_met'] else 'no':>4} "
            f"{r['peak_gops']:>6.1f} {r['peak_gops'] / r['dsp_used']:>8.3f} "
            f"{r['build_s']:>6.0f}s  {_seeds_text(r.get('seeds', []))}")
    return "\n".join(lines)


def _seeds_text(seeds: list) -> str:
    return " / ".join(("no route" if s["fmax_mhz"] is None else
                       f"{s['fmax_mhz']:.1f}{'' if s['timing_met'] else '*'}")
                      + f" (seed {s['seed']})" for s in seeds)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    open_boards = sorted(n for n, b in BOARDS.items() if b.open_flow)
    parser.add_argument("--boards", nargs="*", default=open_boards)
    parser.add_argument("--shapes", nargs="*", default=list(DEFAULT_SHAPES),
                        help="BATCHxBLOCK_INxBLOCK_OUT shapes to try on ulx3s-85f")
    parser.add_argument("--out", default="build/bench-fpga", help="build folder")
    parser.add_argument("--json", default=None, help="write the rows as JSON here")
    parser.add_argument("--reuse", action="store_true", help="reuse matching report.json")
    parser.add_argument("--seeds", type=int, nargs="+", default=[1],
                        help="placement seeds: the first builds, the others place and route "
                             "its netlist again (Fmax per seed; * = clock not met)")
    parser.add_argument("--set", nargs="*", default=[], metavar="PARAM=VALUE",
                        help="Config parameters for the ULX3S shapes, e.g. alu_mul_bits=0")
    parser.add_argument("--placer", choices=PLACERS,
                        help="nextpnr placer for every build (default: each board's)")
    parser.add_argument("--no-timing-ripup", action="store_true",
                        help="route without router2's timing-driven rip-up")
    parser.add_argument("--timing-margin", type=float, default=None, metavar="F",
                        help="place and route for the clock x (1 + F) (default: each board's)")
    parser.add_argument("--lut-multipliers", action="store_true",
                        help="GEMM products past the DSPs from LUTs (Board.hard_dsp=False)")
    parser.add_argument("--gemm-dsps", type=int, default=None, metavar="N",
                        help="at most N GEMM products in DSPs, the rest from carry rows "
                             "(Board.gemm_dsps; 0: all)")
    args = parser.parse_args(argv)
    out_root = Path(args.out)

    def board_of(name):
        board = get_board(name)
        return replace(board, placer=args.placer or board.placer,
                       timing_ripup=board.timing_ripup and not args.no_timing_ripup,
                       hard_dsp=board.hard_dsp and not args.lut_multipliers,
                       gemm_dsps=board.gemm_dsps if args.gemm_dsps is None else args.gemm_dsps,
                       timing_margin=board.timing_margin if args.timing_margin is None
                       else args.timing_margin)
    jobs = [(board_of(name), board_of(name).cfg()) for name in args.boards]
    ulx3s = board_of("ulx3s-85f")
    overrides = {k: int(v) for k, v in (item.split("=", 1) for item in args.set)}
    for shape in args.shapes:
        cfg = shape_config(ulx3s, shape, overrides)
        if all(cfg != c for _, c in jobs):
            jobs.append((ulx3s, cfg))
    rows = [one(board, cfg, out_root, args.reuse, lambda m: print(m, file=sys.stderr),
                args.seeds) for board, cfg in jobs]
    print(table(rows))
    text = json.dumps(rows, indent=2)
    if args.json:
        write_text_atomic(args.json, text + "\n")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
