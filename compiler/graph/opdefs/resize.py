"""Resize (ONNX Resize 13, 18, 19): nearest / linear / cubic interpolation over any axes.

The converter resolves the output shape and, per axis, the scale and region of interest the
coordinate transformation uses. The kernel is separable: per resized axis a weight matrix
[out, in] (one-hot for nearest, 2 taps for linear, 4 for cubic, wider with antialias) is
applied with a tensordot, in float64, last axis first (ONNX's nesting order)."""
from __future__ import annotations

import numpy as np

from ..ir import TensorType
from ..opdef import OpDef, onnx_op, register
from ..shapes import fail, need

MODES = ("nearest", "linear", "cubic")
COORDS = ("half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners",
          "asymmetric", "tf_crop_and_resize")
NEAREST = ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil")


def infer_resize(node, types):
    need(node, types, 1)
    shape = tuple(node.attr("shape"))
    if len(shape) != types[0].rank or node.attr("mode") not in MODES or \
            node.attr("coord") not in COORDS:
        raise fail(node, "shape / mode / coordinate transformation",
                   f"rank {types[0].rank}, one of {MODES}, one of {COORDS}",
                   (shape, node.attr("mode"), node.attr("coord")))
    return [TensorType(shape, types[0].dtype)]


def _source(node, axis: int, n: int, m: int) -> np.ndarray:
    """x_original of every output index of `axis` (float64). As ONNX's reference, the
    corner-aligned modes divide by the fractional output width scale * n less one."""
    x = np.arange(m, dtype=np.float64)
    scale = float(node.attr("scales")[axis])
    width = scale * n
    coord = node.attr("coord")
    if coord == "half_pixel":
        return (x + 0.5) / scale - 0.5
    if coord == "half_pixel_symmetric":
        adjustment = m / (scale * n)
        return n / 2 * (1 - adjustment) + (x + 0.5) / scale - 0.5
    if coord == "pytorch_half_pixel":
        return (x + 0.5) / scale - 0.5 if m > 1 else np.zeros(m)
    if coord == "align_corners":
        return x * (n - 1) / (width - 1) if width != 1 else np.zeros(m)
    if coord == "asymmetric":
        return x / scale
    rank = len(node.attr("shape"))
    start, end = node.attr("roi")[axis], node.attr("roi")[rank + axis]
    if width != 1:
        return start * (n - 1) + x * (end - start) * (n - 1) / (width - 1)
    return np.full(m, start * (n - 1) + (end - start) * (n - 1) / 2)


def _nearest(node, src: np.ndarray) -> np.ndarray:
    floor = np.floor(src)
    frac = src - floor
    mode = node.attr("nearest_mode", "round_prefer_floor")
    if mode == "round_prefer_floor":
        up = frac > 0.5
    elif mode == "round_prefer_ceil":
        up = frac >= 0.5
    elif mode == "floor":
        up = np.zeros_like(frac, bool)
    else:
        up = frac > 0
    return (floor + up).astype(np.int64)


def _keys(t: np.ndarray, a: float) -> np.ndarray:
    """The cubic convolution kernel (Keys, coefficient a)."""
    t = np.abs(t)
    near = ((a + 2) * t - (a + 3)) * t * t + 1
    far = ((a * t - 5 * a) * t + 8 * a) * t - 4 * a
    return np.where(t <= 1, near, np.where(t < 2, far, 0.0))


def _weights(node, axis: int, n: int, m: int) -> np.ndarray:
    """The [m, n] interpolation matrix of one axis."""
    src = _source(node, axis, n, m)
    w = np.zeros((m, n))
    rows = np.arange(m)
    mode = node.attr("mode")
    if mode == "nearest":
        w[rows, np.clip(_nearest(node, src), 0, n - 1)] = 1.0
        return w
    scale = float(node.attr("scales")[axis])
    stretch = min(scale, 1.0) if node.attr("antialias", 0) else 1.0
    radius = 1 if mode == "linear" else 2
    start = int(np.floor(-radius / stretch)) + 1
    base = np.floor(src)
    for k in range(start, 2 - start):
        t = (k - (src - base)) * stretch
        coeff = np.clip(1 - np.abs(t), 0, 1) if mode == "linear" else \
            _keys(t, node.attr("cubic_coeff_a", -0.75))
        index = base.astype(np.int64) + k
        inside = (index >= 0) & (index < n)
        if node.attr("exclude_outside", 0):
            coeff = np.where(inside, coeff, 0.0)
        np.add.at(w, (rows, np.clip(index, 0, n - 1)), coeff)
    if node.attr("antialias", 0) or node.attr("exclude_outside", 0):
        w /= w.sum(axis=1, keepdims=True)
    return w


def ref_resize(node, x):
    out = x.astype(np.float64)
    shape = node.attr("shape")
    for axis in reversed(range(x.ndim)):
        n, m = x.shape[axis], shape[axis]
        if n == m and float(node.attr("scales")[axis]) == 1.0 and \
                node.attr("coord") != "tf_crop_and_resize":
            continue
        w = _weights(node, axis, n, m)
        out = np.moveaxis(np.tensordot(w, out, axes=([1], [axis])), 0, axis)
        if node.attr("coord") == "tf_crop_and_resize":
            src = _source(node, axis, n, m)
            outside = (src < 0) | (src > n - 1)
            index = [slice(None)] * x.ndim
            index[axis] = outside
            out[tuple(index)] = node.attr("extrapolation_value", 0.0)
    return out.astype(x.dtype)


register(OpDef("resize", infer_resize, reference=ref_resize,
               doc="nearest / linear / cubic resampling to `shape` (ONNX Resize semantics)"))


def _sizes(c, x_shape, axes, sizes, scales):
    """(output shape, per-axis scales) from the `sizes` or `scales` input."""
    rank = len(x_shape)
    out, full = list(x_shape), [1.0] * rank
    if sizes is not None:
        policy = c.attr("keep_aspect_ratio_policy", "stretch")
        ratios = [sizes[i] / x_shape[a] for i, a in enumerate(axes)]
        if policy in ("not_larger", "not_smaller"):
            r = min(ratios) if policy == "not_larger" else max(ratios)
            for a in axes:
                out[a], full[a] = int(np.floor(r * x_shape[a] + 0.5)), r
        elif policy == "stretch":
            for i, a in enumerate(axes):
                out[a], full[a] = int(sizes[i]), ratios[i]
        else:
            raise c.fail("keep_aspect_ratio_policy", "stretch, not_larger or not_smaller",
                         repr(policy))
        return out, full
    roi = c.const(1) if c.attr("coordinate_transformation_mode") == "tf_crop_and_resize" \
        else None
    for i, a in enumerate(axes):
        span = 1.0 if roi is None or not roi.size else float(roi[len(axes) + i] - roi[i])
        out[a], full[a] = int(np.floor(x_shape[a] * span * scales[i])), float(scales[i])
    return out, full


@onnx_op("Resize", versions=(13, 18, 19), static_inputs=(1, 2, 3))
def _resize(c):
    x = c.type(0)
    rank = x.rank
    axes = [c.axis(a, rank, "axes") for a in c.attr("axes", range(rank))]
    mode = c.attr("mode", "nearest")
    coord = c.attr("coordinate_transformation_mode", "half_pixel")
    if mode not in MODES or coord not in COORDS or \
            c.attr("nearest_mode", "round_prefer_floor") not in NEAREST:
        raise c.fail("mode / coordinate_transformation_mode / nearest_mode",
                     f"in {MODES} / {COORDS} / {NEAREST}",
                     (mode, coord, c.attr("nearest_mode")))
    scales = c.static(2, "scales")
    sizes = c.static(3, "sizes")
    scales = None if scales is None or not scales.size else [float(s) for s in scales]
    sizes = None if sizes is None or not sizes.size else [int(s) for s in sizes]
    if (scales is None) == (sizes is None):
        raise c.fail("scales / sizes", "exactly one of them", "both or neither")
    out, full = _sizes(c, x.shape, axes, sizes, scales)
    roi = [0.0] * rank + [1.0] * rank
    given = c.const(1)
    if coord == "tf_crop_and_resize" and given is not None and given.size:
        for i, a in enumerate(axes):
            roi[a], roi[rank + a] = float(given[i]), float(given[len(axes) + i])
    c.emit("resize", [c.input(0)], shape=tuple(out), scales=tuple(full), roi=tuple(roi),
           mode=mode, coord=coord, nearest_mode=c.attr("nearest_mode", "round_prefer_floor"),
           cubic_coeff_a=c.attr("cubic_coeff_a", -0.75),
           exclude_outside=c.attr("exclude_outside", 0),
           extrapolation_value=c.attr("extrapolation_value", 0.0),
           antialias=c.attr("antialias", 0))
