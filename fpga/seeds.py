"""``build_seeds``: one open-flow build per nextpnr placement seed, keeping the best.

At speed grade 6 builds of the same design differ by 8-16 MHz with placement alone
(docs/fpga.md), so a clock that one seed misses another often meets. Each seed builds
into ``<out>/seed-<N>``; the sweep stops at the first build that meets timing (or keeps
the fastest when none does) and copies its bitstream, report and summary to ``<out>``.

    report = build_seeds("ulx3s-85f", seeds=[1, 2, 3])
"""
from __future__ import annotations

import shutil
from pathlib import Path

from .boards import get_board
from .build import DEFAULT_OUT, TOP, build_board
from .errors import FpgaError, PlaceRouteError
from .report import write_report

BITSTREAM = f"{TOP}.bit"


def build_seeds(board, seeds, out_dir=None, progress=print, cfg=None) -> dict:
    """Build ``board`` once per seed in ``seeds`` (in order) into ``out_dir/seed-N``;
    returns the chosen report (also in ``out_dir``) with ``seed`` and ``seeds_tried``."""
    board = get_board(board)
    seeds = list(seeds)
    if not seeds or len(set(seeds)) != len(seeds):
        raise FpgaError(f"seeds must be a non-empty list of distinct integers, not {seeds}")
    if not board.open_flow:
        raise FpgaError(f"seeds apply to the open-flow boards only, not {board.name} "
                        f"({board.flow}: the vendor tools place it)")
    out_dir = Path(out_dir) if out_dir is not None else DEFAULT_OUT / board.name
    built, tried = [], []
    for number, seed in enumerate(seeds, 1):
        progress(f"seed {seed} ({number} of {len(seeds)}):")
        try:
            report = build_board(board, out_dir=out_dir / f"seed-{seed}", progress=progress,
                                 cfg=cfg, seed=seed)
        except PlaceRouteError as exc:
            progress(f"seed {seed} failed in place and route; trying the next seed")
            tried.append({"seed": seed, "fmax_mhz": None, "timing_met": False,
                          "error": exc.reason})
            continue
        built.append((seed, report))
        tried.append({"seed": seed, "fmax_mhz": report["fmax_mhz"],
                      "timing_met": report["timing_met"]})
        if report["timing_met"]:
            break
    if not built:
        raise PlaceRouteError(f"place and route must succeed for one of seeds {seeds}, not "
                              f"fail for each: " + "; ".join(
                                  f"{t['seed']}: {t['error']}" for t in tried))
    seed, report = built[-1] if built[-1][1]["timing_met"] else max(
        built, key=lambda item: item[1]["fmax_mhz"] or 0)
    shutil.copy2(out_dir / f"seed-{seed}" / BITSTREAM, out_dir / BITSTREAM)
    report = dict(report, seed=seed, seeds_tried=tried, bitstream=str(out_dir / BITSTREAM))
    write_report(report, out_dir)
    verdict = "meets timing" if report["timing_met"] else "is the fastest; none met timing"
    progress(f"seed {seed} {verdict}: {report['fmax_mhz'] or 0:.1f} MHz "
             f"(tried {', '.join(str(t['seed']) for t in tried)}); copied to {out_dir}")
    return report
