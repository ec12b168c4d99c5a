"""Workloads as models: a spec's ``[[workload]]`` turned into (graph, calibration, input).

    graph, calibration, x = load_workload(workload)     # cached per process

Built-in networks come from ``vtalab.compiler.models`` (seeded weights, nothing
downloaded); a layer shape becomes a one-layer network (conv + bias + ReLU, or a fully
connected layer + ReLU) so that it goes through the same compiler path as a whole model
(quantisation, fused epilogue, tiling by the cost model or a tuning log). An ONNX file is
loaded as it is, calibrated with its ``calibrate`` samples or seeded random ones.
"""
from __future__ import annotations

import numpy as np

from .spec import DseError, Workload

CAL_SAMPLES = 2
INPUT_SEED = 100
_CACHE: dict = {}


def load_workload(wl: Workload):
    """(graph IR, calibration list, input array), built once per process."""
    hit = _CACHE.get(wl.key)
    if hit is None:
        hit = _build(wl)
        if len(_CACHE) > 16:
            _CACHE.clear()
        _CACHE[wl.key] = hit
    return hit


def _build(wl: Workload):
    from vtalab.compiler.graph import load_onnx
    from vtalab.compiler.models import random_samples
    model = _model(wl)
    graph = load_onnx(model)
    shape = tuple(graph.types[graph.inputs[0]].shape)
    if wl.calibrate:
        from vtalab.compiler.exec.module import check_calibration
        calibration = check_calibration(graph, np.load(wl.calibrate))
    else:
        calibration = random_samples(shape, CAL_SAMPLES)
    x = random_samples(shape, 1, seed=INPUT_SEED)[0]
    return graph, calibration, x


def _model(wl: Workload):
    args = wl.args
    if wl.kind == "onnx":
        return wl.path
    if wl.kind == "model":
        from vtalab.compiler import models
        build = getattr(models, args["model"])
        if args["model"] == "mlp":
            return build(batch=args["batch"])
        return build(args["input_size"], batch=args["batch"])
    if wl.kind == "conv":
        return conv_model(*args["conv"], batch=args["batch"])
    if wl.kind == "dense":
        return dense_model(*args["dense"], batch=args["batch"])
    raise DseError(f"workload kind must be one of model, conv, dense, onnx, not {wl.kind!r}")


def conv_model(channels, height, width, filters, kernel, stride, pad, batch: int = 1):
    """One conv layer with bias and ReLU: what the accelerator runs as one fused task."""
    from vtalab.compiler.models.builder import OnnxNet
    net = OnnxNet(f"conv{channels}x{height}x{width}-{filters}k{kernel}s{stride}p{pad}")
    x = net.input("input", (batch, channels, height, width))
    y = net.relu(net.conv(x, channels, filters, kernel, stride, pad, bias=True))
    out_h = (height + 2 * pad - kernel) // stride + 1
    out_w = (width + 2 * pad - kernel) // stride + 1
    if out_h < 1 or out_w < 1:
        raise DseError(f"conv workload output must be at least 1x1, not {out_h}x{out_w}")
    net.output(y, (batch, filters, out_h, out_w))
    return net.model()


def dense_model(in_features, out_features, batch: int = 1):
    """One fully connected layer with bias and ReLU."""
    from vtalab.compiler.models.builder import OnnxNet
    net = OnnxNet(f"dense{in_features}-{out_features}")
    x = net.input("input", (batch, in_features))
    y = net.relu(net.gemm(x, in_features, out_features))
    net.output(y, (batch, out_features))
    return net.model()
