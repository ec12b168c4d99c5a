"""PyTorch models into vtalab, through torch's ONNX exporter (torch is an optional extra).

    module = compile_torch(model, (x,), "default", calibration=samples)   # exec Module
    graph = load_torch(model, (x,))                                       # graph IR
    model = load_torch_file("model.pt")      # TorchScript, a pickled nn.Module, or .pt2

The module is exported in eval mode with torch.onnx's TorchScript exporter at `opset`
(17 by default; the exporter goes up to opset 22), then imported like any ONNX model:
static shapes come from the example inputs.
"""
from __future__ import annotations

import contextlib
import io
import warnings
from pathlib import Path

import numpy as np

from .graph.errors import ModelError


def _torch():
    try:
        import torch
    except ModuleNotFoundError:
        raise ModelError("torch must be installed to import PyTorch models (pip install "
                         "'vtalab[torch]'), not missing") from None
    return torch


def _as_tuple(example_inputs) -> tuple:
    torch = _torch()
    items = example_inputs if isinstance(example_inputs, (tuple, list)) else (example_inputs,)
    return tuple(torch.as_tensor(np.asarray(a)) if not isinstance(a, torch.Tensor) else a
                 for a in items)


def export_onnx(module, example_inputs, opset: int = 17):
    """An onnx.ModelProto of `module` (put in eval mode) traced with `example_inputs`."""
    torch = _torch()
    import onnx
    if not isinstance(module, torch.nn.Module):
        raise ModelError(f"model must be a torch.nn.Module, not {type(module).__name__}")
    inputs = _as_tuple(example_inputs)
    module = module.eval()
    buffer = io.BytesIO()
    names = [f"input{i}" if len(inputs) > 1 else "input" for i in range(len(inputs))]
    fastpath = torch.backends.mha.get_fastpath_enabled()
    torch.backends.mha.set_fastpath_enabled(False)   # the fused attention kernel has no
    try:                                             # ONNX form: export its plain ops
        with warnings.catch_warnings(), torch.no_grad(), \
                contextlib.redirect_stderr(io.StringIO()):
            warnings.simplefilter("ignore")
            torch.onnx.export(module, inputs, buffer, opset_version=opset, dynamo=False,
                              input_names=names, do_constant_folding=True)
    except Exception as exc:  # the exporter's own refusal: say which model and opset
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ModelError(f"PyTorch model {type(module).__name__} must export to ONNX at "
                         f"opset {opset}, not fail with: {first}") from None
    finally:
        torch.backends.mha.set_fastpath_enabled(fastpath)
    return onnx.load_from_string(buffer.getvalue())


def load_torch(module, example_inputs, opset: int = 17):
    """The graph IR of a PyTorch module (exported to ONNX at `opset`)."""
    from .graph import load_onnx
    return load_onnx(export_onnx(module, example_inputs, opset),
                     name=type(module).__name__.lower())


def compile_torch(module, example_inputs, config="default", calibration=None, opset: int = 17,
                  **options):
    """A compiled exec Module of a PyTorch module. Without `calibration` the example inputs
    calibrate the int8 quantisation (pass real samples for real accuracy)."""
    from .exec import compile_model
    graph = load_torch(module, example_inputs, opset)
    if calibration is None and options.get("quantize", True):
        calibration = [np.asarray(t.detach().cpu().numpy(), np.float32)
                       for t in _as_tuple(example_inputs)[:1]]
    return compile_model(graph, config, calibration=calibration, **options)


def load_torch_file(path):
    """An nn.Module from a file: TorchScript (torch.jit.save), a pickled module
    (torch.save(model)) or an ExportedProgram (.pt2, torch.export.save)."""
    torch = _torch()
    path = Path(path)
    if not path.is_file():
        raise ModelError(f"PyTorch model path must be an existing file, not {str(path)!r}")
    if path.suffix == ".pt2":
        return torch.export.load(str(path)).module()
    try:
        return torch.jit.load(str(path), map_location="cpu")
    except RuntimeError:
        pass
    try:
        model = torch.load(str(path), map_location="cpu", weights_only=False)
    except Exception as exc:
        raise ModelError(f"PyTorch file {path} must hold a TorchScript or pickled "
                         f"nn.Module, not fail to load ({exc})") from None
    if not isinstance(model, torch.nn.Module):
        raise ModelError(f"PyTorch file {path} must hold an nn.Module, not "
                         f"{type(model).__name__} (a state dict needs its model class)")
    return model
