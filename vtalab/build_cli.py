"""``vtalab build``: vtalab/cli.py calls ``add_build_parser(sub)``.

    vtalab build --board ulx3s-85f [--config FILE] [--out DIR] [--plan-only]
                 [--seed N | --seeds N [N ...]] [--lut-multipliers]
                 [--gemm-dsps N] [--timing-margin F]
    vtalab build --list
"""
from __future__ import annotations

from dataclasses import replace


def add_build_parser(subparsers) -> None:
    build = subparsers.add_parser("build", help="build a bitstream or a vendor project for a board")
    build.add_argument("--board", help="board name (see --list)")
    build.add_argument("--config", default=None,
                       help="preset or .json/.toml file (default: the board's preset)")
    build.add_argument("--out", default=None, help="output folder (default: build/<board>)")
    build.add_argument("--plan-only", action="store_true",
                       help="write the project / build scripts without running tools")
    build.add_argument("--seed", type=int, default=1, help="nextpnr placement seed")
    build.add_argument("--seeds", type=int, nargs="+", default=None,
                       help="one build per seed until one meets timing (else the fastest "
                            "is kept); each in OUT/seed-N, the chosen one copied to OUT")
    build.add_argument("--lut-multipliers", action="store_true",
                       help="build the GEMM products past the part's DSPs from LUTs "
                            "(open-flow boards; the default stops at the DSP count)")
    build.add_argument("--gemm-dsps", type=int, default=None, metavar="N",
                       help="at most N GEMM products in DSPs, the rest from carry rows "
                            "(open-flow boards; 0: all, the design then packs away from "
                            "the DSP rows)")
    build.add_argument("--timing-margin", type=float, default=None, metavar="F",
                       help="open flow: place and route for the clock x (1 + F) (default: "
                            "the board's, 0.05 on ulx3s-85f; 0: the clock itself)")
    build.add_argument("--list", action="store_true", help="list the boards")
    build.set_defaults(func=run_build)


def run_build(args) -> int:
    from vtalab.spec import load_config
    from vtalab.spec.errors import VtaError

    from vtalab.fpga.boards import BOARDS, get_board
    from vtalab.fpga.build import build_board
    if args.list or not args.board:
        for name, board in sorted(BOARDS.items()):
            cfg = board.cfg()
            print(f"{name:<16} {board.part:<20} {board.flow:<8} "
                  f"{cfg.batch}x{cfg.block_in}x{cfg.block_out}  {board.notes}")
        if not args.list:
            raise VtaError("--board must name a board (see vtalab build --list), not be missing")
        return 0
    cfg = load_config(args.config) if args.config else None
    board = get_board(args.board)
    if args.lut_multipliers:
        board = replace(board, hard_dsp=False)
    if args.gemm_dsps is not None:
        board = replace(board, gemm_dsps=args.gemm_dsps)
    if args.timing_margin is not None:
        board = replace(board, timing_margin=args.timing_margin)
    if args.seeds:
        if args.plan_only:
            raise VtaError("--seeds must come without --plan-only (a plan has no placement)")
        from vtalab.fpga.seeds import build_seeds
        build_seeds(board, args.seeds, out_dir=args.out, cfg=cfg,
                    progress=lambda line: print(line, flush=True))
        return 0
    report = build_board(board, plan_only=args.plan_only, out_dir=args.out, cfg=cfg,
                         seed=args.seed, progress=lambda line: print(line, flush=True))
    if report.get("plan_only"):
        print(f"wrote {report['out_dir']}")
    return 1 if report.get("lint") else 0
