"""What `vtalab compile` and `vtalab run` do, as library functions (the CLI is thin).

    module = compile_file("m.onnx", "m.vtl", config="default", calibrate="cal.npy")
    module = compile_file("m.pt", "m.vtl", input_shape="1,3,224,224")   # PyTorch
    y, profile = run_file("m.vtl", "x.npy", output="y.npy", backend="fsim")

Without a calibration set a model that carries no quantisation ranges is calibrated on
seeded random normal samples (said in the output); a QDQ model uses its own scales.
"""
from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

from vtalab.spec.errors import VtaError

from vtalab.compiler.exec.module import Module, compile_model
from vtalab.compiler.exec.serialize import load_module, save_module

SYNTHETIC_SAMPLES = 8
TORCH_SUFFIXES = (".pt", ".pth", ".pt2")


class InputFileError(VtaError, ValueError):
    """A file named on the command line cannot be read as what it must be."""


def load_npy(path, what: str) -> np.ndarray:
    try:
        return np.load(path, allow_pickle=False)
    except FileNotFoundError:
        raise InputFileError(f"{what} must be an existing .npy file, not missing "
                             f"{str(path)!r}") from None
    except (ValueError, OSError, EOFError) as exc:
        raise InputFileError(f"{what} must be a readable .npy file, not {str(path)!r} "
                             f"({exc})") from None


def calibration_for(graph, calibrate, echo):
    if calibrate is not None:
        return load_npy(calibrate, "calibration data")
    if graph.meta.get("activation_ranges") or any(n.op in ("quantize", "dequantize",
                                                           "qlinear_conv", "qlinear_matmul")
                                                  for n in graph.nodes):
        return None
    shape = graph.types[graph.inputs[0]].shape
    echo(f"no --calibrate data: calibrating on {SYNTHETIC_SAMPLES} seeded random normal "
         f"inputs of shape {shape} (pass real samples for real accuracy)")
    rng = np.random.default_rng(0)
    return [rng.normal(0, 1, shape).astype(np.float32) for _ in range(SYNTHETIC_SAMPLES)]


def parse_shape(text) -> tuple[int, ...]:
    try:
        shape = tuple(int(d) for d in str(text).replace("x", ",").split(",") if d.strip())
    except ValueError:
        shape = ()
    if not shape or min(shape) < 1:
        raise InputFileError(f"--input-shape must be positive sizes like 1,3,224,224, not "
                             f"{text!r}")
    return shape


def load_model(model_path, input_shape=None, opset: int = 17):
    """The graph IR of an ONNX file, or of a PyTorch file exported at `opset` with a
    random example input of `input_shape`."""
    from vtalab.compiler.graph import load_onnx
    if Path(model_path).suffix not in TORCH_SUFFIXES:
        return load_onnx(model_path)
    if input_shape is None:
        raise InputFileError(f"--input-shape must be given for the PyTorch model "
                             f"{str(model_path)!r} (its example input), not omitted")
    from vtalab.compiler.torch_import import load_torch, load_torch_file
    x = np.random.default_rng(0).normal(0, 1, parse_shape(input_shape)).astype(np.float32)
    return load_torch(load_torch_file(model_path), (x,), opset)


def compile_onnx(model_path, config="default", calibrate=None, per_channel=False,
                 quantize=True, echo=print, tuning_log=None, input_shape=None,
                 opset: int = 17, join: int | None = None) -> Module:
    start = time.perf_counter()
    graph = load_model(model_path, input_shape, opset)
    calibration = calibration_for(graph, calibrate, echo) if quantize else None
    echo(f"compiling {graph.name} ({len(graph.nodes)} nodes) for {config}")
    module = compile_model(graph, config, calibration=calibration, per_channel=per_channel,
                           quantize=quantize, echo=echo, tuning_log=tuning_log, join=join)
    if tuning_log is not None:
        t = module.stats["tuning"]
        echo(f"tuning log {t['log']}: {len(t['used'])} tasks tuned, {len(t['untuned'])} "
             f"with default knobs")
    module.stats["compile_seconds"] = time.perf_counter() - start
    return module


def compile_table(module: Module) -> str:
    """Per-layer static profile: placement, MACs, program size, knobs or reason."""
    head = f"{'#':>3} {'layer':<20} {'op':<16} {'place':<6} {'MACs':>12} {'insns':>6}  detail"
    lines = [head, "-" * len(head)]
    for i, s in enumerate(module.steps):
        insns = len(s.kernel) if s.kernel is not None else 0
        detail = f"{s.info.get('what', '')} {s.info.get('knobs', '')}" if s.kernel else s.reason
        lines.append(f"{i:>3} {s.name[:20]:<20} {s.op[:16]:<16} {s.target:<6} "
                     f"{s.info.get('macs', 0):>12,} {insns:>6}  {detail[:90]}")
    return "\n".join(lines)


def compile_file(model_path, output, config="default", calibrate=None, per_channel=False,
                 quantize=True, echo=print, tuning_log=None, input_shape=None,
                 opset: int = 17, join: int | None = None) -> Module:
    module = compile_onnx(model_path, config, calibrate, per_channel, quantize, echo,
                          tuning_log, input_shape, opset, join)
    path = save_module(module, output)
    echo(module.report)
    echo(compile_table(module))
    echo(module.summary())
    echo(f"compiled in {module.stats['compile_seconds']:.2f} s; wrote {path} "
         f"({path.stat().st_size / 1024:,.1f} KiB)")
    return module


def progress_printer(stream=None, every: float = 0.5):
    """A progress callback printing '[k/n] layer' at most every `every` seconds."""
    stream = stream or sys.stderr
    state = {"last": 0.0}

    def show(done, total, record):
        now = time.perf_counter()
        if done == total or now - state["last"] >= every:
            state["last"] = now
            end = "\n" if done == total else ""
            prefix = "\r" if stream.isatty() else ""
            if not stream.isatty() and done != total:
                end = "\n"
            stream.write(f"{prefix}  [{done}/{total}] {record.name:<24}{end}")
            stream.flush()
    return show


def run_file(model_path, input_path, output=None, backend="fsim", config=None,
             calibrate=None, echo=print, progress=None):
    """Run a .vtl module (or compile an .onnx first) on `backend`; returns (y, Profile)."""
    path = Path(model_path)
    if path.suffix == ".onnx":
        module = compile_onnx(path, config or "default", calibrate, echo=echo)
        echo(module.summary())
    else:
        module = load_module(path, config)
    x = load_npy(input_path, "input")
    want = module.input_type()
    if x.dtype != np.dtype(want.dtype) and x.dtype.kind == "f":
        x = x.astype(want.dtype)
    echo(f"running {module.name} on {backend} ({module.cfg.name})")
    outputs, profile = module.run(x, backend=backend, progress=progress)
    y = outputs[module.outputs[0]]
    echo(profile.table())
    if output is not None:
        np.save(output, y)
        echo(f"wrote {output}: {y.dtype}[{'x'.join(map(str, y.shape))}]")
    return y, profile
