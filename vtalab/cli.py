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
    if args.matmul:
        from vtalab.demo import run_demo
        return run_demo(args.config, backend=args.backend, size=tuple(args.size or (64, 256, 256)),
                        seed=args.seed)
    if args.size is not None:
        raise VtaError(f"--size must come with --matmul, not alone (the ResNet-18 demo "
                       f"takes --input-size)")
    from vtalab.demo import run_resnet_demo
    return run_resnet_demo(args.config, backend=args.backend, input_size=args.input_size,
                           seed=args.seed)


def _cmd_compile(args) -> int:
    from vtalab.model_cli import compile_file
    compile_file(args.model, args.output, args.config, args.calibrate,
                 per_channel=args.per_channel, quantize=not args.float,
                 tuning_log=args.tuning_log, input_shape=args.input_shape, opset=args.opset,
                 join=args.join)
    return 0


def _cmd_run(args) -> int:
    from vtalab.model_cli import progress_printer, run_file
    run_file(args.model, args.input, args.output, args.backend, args.config, args.calibrate,
             progress=None if args.quiet else progress_printer())
    return 0


def _cmd_sim(args) -> int:
    from vtalab.runtime.runfile import run_program_file
    options = {}
    if args.pressure is not None:
        options["pressure"] = args.pressure
    if args.waveform:
        options["waveform"] = args.waveform
    run_program_file(args.program, args.backend, config=args.config, timeline=args.timeline,
                     trace_json=args.trace, **options)
    return 0


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

    demo = sub.add_parser("demo", help="compile ResNet-18 (built in code), run it on the "
                          "accelerator and check it (--matmul: the blocked matmul demo)")
    demo.add_argument("--config", default="default", help="preset name or .json/.toml file")
    demo.add_argument("--backend", default="fsim", help="device backend (default: fsim)")
    demo.add_argument("--input-size", type=int, default=64,
                      help="ResNet-18 input height/width (default 64)")
    demo.add_argument("--matmul", action="store_true",
                      help="run the blocked int8 matmul demo instead")
    demo.add_argument("--size", type=int, nargs=3, default=None, metavar=("M", "K", "N"),
                      help="with --matmul: (M x K) int8 times (K x N) int8 (64 256 256)")
    demo.add_argument("--seed", type=int, default=0)
    demo.set_defaults(func=_cmd_demo)

    comp = sub.add_parser("compile", help="compile an ONNX (or PyTorch) model into a module "
                                          "file (.vtl)")
    comp.add_argument("model", help="ONNX model file, or a PyTorch one (.pt / .pth: "
                                    "TorchScript or a pickled nn.Module; .pt2: torch.export)")
    comp.add_argument("-o", "--output", required=True, help="module file to write (.vtl)")
    comp.add_argument("--config", default="default", help="preset name or .json/.toml file")
    comp.add_argument("--calibrate", metavar="DATA.npy",
                      help="calibration inputs: one input-shaped array or a stack of them")
    comp.add_argument("--per-channel", action="store_true", help="per-channel weight scales")
    comp.add_argument("--float", action="store_true",
                      help="no quantisation: everything on the CPU fallback in float32")
    comp.add_argument("--tuning-log", metavar="LOG",
                      help="use the best record per task from this tuning log")
    comp.add_argument("--join", type=int, metavar="N",
                      help="programs each run of consecutive accelerator layers becomes "
                           "(default: compiler/exec/module.py JOIN_PARTS; 0: one per layer)")
    comp.add_argument("--input-shape", metavar="N,C,H,W",
                      help="a PyTorch model's input shape (its example input for export)")
    comp.add_argument("--opset", type=int, default=17,
                      help="ONNX opset a PyTorch model is exported at (default 17)")
    comp.set_defaults(func=_cmd_compile)

    from vtalab import tune_cli
    tune_cli.add_parser(sub)

    from vtalab import dse_cli
    dse_cli.add_parser(sub)

    run = sub.add_parser("run", help="run a module (.vtl) or an ONNX model on a backend")
    run.add_argument("model", help="MODEL.vtl, or MODEL.onnx (compiled first)")
    run.add_argument("--input", required=True, metavar="X.npy", help="the model's input")
    run.add_argument("--output", metavar="Y.npy", help="write the output here")
    run.add_argument("--backend", default="fsim", help="fsim (default) or rtl")
    run.add_argument("--config", default=None,
                     help="for .onnx: target config (default: default); for .vtl: must match")
    run.add_argument("--calibrate", metavar="DATA.npy", help="for .onnx: calibration inputs")
    run.add_argument("-q", "--quiet", action="store_true", help="no progress lines")
    run.set_defaults(func=_cmd_run)

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

    sim = sub.add_parser("sim", help="run a saved program (.npz image or raw .bin stream) "
                                     "and print its counters")
    sim.add_argument("program", help="program file (.npz from save_program/fuzz, or .bin)")
    sim.add_argument("--backend", default="fsim", help="fsim (default) or rtl")
    sim.add_argument("--config", default=None,
                     help="preset or file (.bin programs; .npz files carry their config)")
    sim.add_argument("--timeline", metavar="PNG", help="rtl only: Gantt chart of the run")
    sim.add_argument("--trace", metavar="JSON", help="rtl only: Perfetto/Chrome trace")
    sim.add_argument("--waveform", metavar="VCD", help="rtl only: waveform dump")
    sim.add_argument("--pressure", type=float, help="rtl only: random AXI back-pressure 0..1")
    sim.set_defaults(func=_cmd_sim)

    from vtalab.build_cli import add_build_parser
    add_build_parser(sub)

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
