"""The one command-line entry point, ``vtalab``. Subcommands are thin calls into the library."""
from __future__ import annotations

import argparse
import sys

from vtalab.spec.errors import VtaError


def _cmd_config_show(args) -> int:
    from vtalab.spec import load_config
    cfg = load_config(args.source)
    print(cfg.to_json() if args.json else cfg.summary(), end="" if args.json else "\n")
    return 0


def _cmd_config_list(args) -> int:
    from vtalab.spec import preset, preset_names
    for name in preset_names():
        cfg = preset(name)
        print(f"{name:<12} {cfg.batch}x{cfg.block_in}x{cfg.block_out}  bus {cfg.bus_bits:>3}  "
              f"{cfg.fingerprint()}")
    return 0


def _cmd_disasm(args) -> int:
    from vtalab.disasm import disassemble
    print(disassemble(args.source, args.config))
    return 0


def _cmd_demo(args) -> int:
    from vtalab.demo import run_demo
    return run_demo(args.config, backend=args.backend, size=args.size, seed=args.seed)


def _cmd_verilog(args) -> int:
    from vtalab.spec import load_config
    from vtalab.spec._atomic import write_text_atomic
    try:
        from vtalab.hw.verilog import generate
    except ImportError as exc:
        raise VtaError(f"vtalab verilog needs the [hw] extra (pip install 'vtalab[hw]'): {exc}")
    cfg = load_config(args.config)
    text = generate(cfg)
    write_text_atomic(args.output, text)
    print(f"wrote {args.output}: {len(text.splitlines())} lines of Verilog for config "
          f"{cfg.name} ({cfg.fingerprint()})")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="vtalab", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    demo = sub.add_parser("demo", help="build, run and check a blocked int8 matmul with requant")
    demo.add_argument("--config", default="default", help="preset name or .json/.toml file")
    demo.add_argument("--backend", default="fsim", help="device backend (default: fsim)")
    demo.add_argument("--size", type=int, nargs=3, default=(64, 256, 256), metavar=("M", "K", "N"),
                      help="matrix sizes: (M x K) int8 times (K x N) int8")
    demo.add_argument("--seed", type=int, default=0)
    demo.set_defaults(func=_cmd_demo)

    config = sub.add_parser("config", help="show or list hardware configurations")
    config_sub = config.add_subparsers(dest="config_command", required=True)
    show = config_sub.add_parser("show", help="print a preset or a config file")
    show.add_argument("source", nargs="?", default="default", help="preset name or file")
    show.add_argument("--json", action="store_true", help="print as JSON")
    show.set_defaults(func=_cmd_config_show)
    listing = config_sub.add_parser("list", help="list the presets")
    listing.set_defaults(func=_cmd_config_list)

    disasm = sub.add_parser("disasm", help="disassemble a raw 128-bit instruction stream")
    disasm.add_argument("source", nargs="+",
                        help="a binary file of little-endian 128-bit words, or hex words")
    disasm.add_argument("--config", default="default")
    disasm.set_defaults(func=_cmd_disasm)

    verilog = sub.add_parser("verilog", help="write synthesizable Verilog of the accelerator")
    verilog.add_argument("--config", default="default")
    verilog.add_argument("-o", "--output", required=True)
    verilog.set_defaults(func=_cmd_verilog)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except VtaError as exc:
        print(f"vtalab {args.command}: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
