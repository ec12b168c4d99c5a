"""Data movement and constants: pad, gather, stride_fold, patches (Pad, Gather, Constant,
Shape, Size, ConstantOfShape, Range, Dropout). Shape-like ops of a static graph become
constants; stride_fold and patches are made by passes/stride_fold.py, not imported."""
from __future__ import annotations

import numpy as np

from .. import kernels_cpu as N
from .. import kernels_int as I
from ..ir import TensorType, is_float
from ..opdef import OpDef, onnx_op, register
from ..shapes import fail, need, need_dtype
from .common import dtype_of, scalar

PAD_MODES = ("constant", "reflect", "edge", "wrap")


def infer_pad(node, types):
    need(node, types, 1)
    x = types[0]
    pads = node.attr("pads")
    if len(pads) != 2 * x.rank or min(pads, default=0) < 0:
        raise fail(node, "pads", f"{2 * x.rank} non-negative numbers", pads)
    if node.attr("mode", "constant") not in PAD_MODES:
        raise fail(node, "mode", f"one of {PAD_MODES}", node.attr("mode"))
    return [TensorType(tuple(d + pads[i] + pads[i + x.rank] for i, d in enumerate(x.shape)),
                       x.dtype)]


def ref_pad(node, x):
    pads, rank = node.attr("pads"), x.ndim
    widths = [(pads[i], pads[i + rank]) for i in range(rank)]
    mode = node.attr("mode", "constant")
    if mode == "constant":
        return np.pad(x, widths, constant_values=np.array(node.attr("value", 0), x.dtype))
    return np.pad(x, widths, mode=mode)


def cpu_pad(node, x):
    return N.pad(node, x) if node.attr("mode", "constant") == "constant" else ref_pad(node, x)


def infer_gather(node, types):
    need(node, types, 2)
    data, indices = types
    need_dtype(node, indices, ("int32", "int64"), "indices dtype")
    axis = node.attr("axis", 0)
    return [TensorType(data.shape[:axis] + indices.shape + data.shape[axis + 1:], data.dtype)]


def ref_gather(node, data, indices):
    axis = node.attr("axis", 0)
    dim = data.shape[axis]
    if indices.size and (indices.min() < -dim or indices.max() >= dim):
        raise fail(node, "indices", f"in {-dim}..{dim - 1}",
                   f"{indices.min()}..{indices.max()}")
    return np.take(data, np.where(indices < 0, indices + dim, indices), axis=axis)


def _pads_and_size(node):
    """The (top, left) pads and the (height, width) output size of stride_fold/patches."""
    pads, size = tuple(node.attr("pads", (0, 0))), tuple(node.attr("size", ()))
    if len(pads) != 2 or min(pads) < 0:
        raise fail(node, "pads", "2 non-negative numbers (top, left)", pads)
    if len(size) != 2 or min(size) < 1:
        raise fail(node, "size", "2 positive numbers (height, width)", size)
    return pads, size


def _zero_padded(x, top: int, left: int, rows: int, cols: int):
    """``x`` with ``top`` zero rows and ``left`` zero columns before it, cropped or extended
    with zeros to rows x cols."""
    padded = np.zeros(x.shape[:2] + (rows, cols), x.dtype)
    src = x[:, :, :max(rows - top, 0), :max(cols - left, 0)]
    padded[:, :, top:top + src.shape[2], left:left + src.shape[3]] = src
    return padded


def _fold_attrs(node):
    block = node.attr("block")
    if not (isinstance(block, int) and block >= 2):
        raise fail(node, "block", "an integer >= 2", block)
    return (block,) + _pads_and_size(node)


def infer_stride_fold(node, types):
    need(node, types, 1)
    x = types[0]
    if x.rank != 4:
        raise fail(node, "input rank", "4 (NCHW)", x.rank)
    block, _, (h, w) = _fold_attrs(node)
    return [TensorType((x.shape[0], x.shape[1] * block * block, h, w), x.dtype)]


def ref_stride_fold(node, x):
    """out[n, (c*block + p)*block + q, u, v] = x[n, c, block*u + p - top, block*v + q - left]
    (0 outside x): space-to-depth of the zero-padded input, ``size`` blocks high and
    wide (the padded input cropped or extended with zeros to fit)."""
    block, (top, left), (h, w) = _fold_attrs(node)
    n, c = x.shape[:2]
    padded = _zero_padded(x, top, left, block * h, block * w)
    return np.ascontiguousarray(padded.reshape(n, c, h, block, w, block)
                                .transpose(0, 1, 3, 5, 2, 4).reshape(n, -1, h, w))


def _patch_attrs(node):
    kernel, stride = node.attr("kernel"), node.attr("stride", 1)
    for name, value in (("kernel", kernel), ("stride", stride)):
        if not (isinstance(value, int) and value >= 1):
            raise fail(node, name, "an integer >= 1", value)
    return (kernel, stride) + _pads_and_size(node)


def infer_patches(node, types):
    need(node, types, 1)
    x = types[0]
    if x.rank != 4:
        raise fail(node, "input rank", "4 (NCHW)", x.rank)
    k, _, _, (h, w) = _patch_attrs(node)
    return [TensorType((x.shape[0], x.shape[1] * k * k, h, w), x.dtype)]


def ref_patches(node, x):
    """out[n, (c*k + a)*k + b, u, v] = x[n, c, stride*u + a - top, stride*v + b - left]
    (0 outside x): every k x k window of the zero-padded input as channels (im2col), ``size``
    windows high and wide."""
    k, s, (top, left), (h, w) = _patch_attrs(node)
    n = x.shape[0]
    padded = _zero_padded(x, top, left, s * (h - 1) + k, s * (w - 1) + k)
    windows = np.lib.stride_tricks.sliding_window_view(padded, (k, k), axis=(2, 3))
    windows = windows[:, :, ::s, ::s][:, :, :h, :w]          # (n, c, h, w, k, k)
    return np.ascontiguousarray(windows.transpose(0, 1, 4, 5, 2, 3).reshape(n, -1, h, w))


register(
    OpDef("pad", infer_pad, reference=ref_pad, cpu=cpu_pad, int8=I.pad, quant="int8",
          keeps_range=True, doc="pads (begins + ends) with mode constant (value), reflect, "
                                "edge or wrap"),
    OpDef("gather", infer_gather, reference=ref_gather, int8=ref_gather, quant="int8",
          keeps_range=True, moves_data=True,
          doc="np.take(data, indices, axis), negative indices wrap once"),
    OpDef("stride_fold", infer_stride_fold, reference=ref_stride_fold, cpu=ref_stride_fold,
          int8=ref_stride_fold, quant="int8", keeps_range=True, moves_data=True,
          doc="NCHW -> N(C*block*block)HW: space-to-depth of the input zero-padded by "
              "`pads` (top, left), `size` (height, width) blocks"),
    OpDef("patches", infer_patches, reference=ref_patches, cpu=ref_patches,
          int8=ref_patches, quant="int8", keeps_range=True, moves_data=True,
          doc="NCHW -> N(C*kernel*kernel)HW: every kernel x kernel window (step `stride`) "
              "of the input zero-padded by `pads` (top, left) as channels (im2col), `size` "
              "(height, width) windows"),
)


# ---- ONNX ----------------------------------------------------------------------------------
@onnx_op("Pad", versions=(13, 18, 19, 21, 23, 24, 25), static_inputs=(1, 2, 3))
def _pad(c):
    mode = c.attr("mode", "constant")
    allowed = PAD_MODES if c.version >= 19 else PAD_MODES[:3]
    if mode not in allowed:
        raise c.fail("mode", f"one of {allowed}", repr(mode))
    x = c.type(0)
    rank = x.rank
    pads = c.ints(1, "pads")
    value = scalar(c, 2, "constant_value", 0)
    if c.has(3):
        axes = [c.axis(a, rank, "axes") for a in c.ints(3, "axes")]
        full = [0] * (2 * rank)
        for i, axis in enumerate(axes):
            full[axis], full[axis + rank] = pads[i], pads[i + len(axes)]
        pads = full
    if len(pads) != 2 * rank:
        raise c.fail("pads", f"{2 * rank} numbers", pads)
    grow = tuple(max(0, p) for p in pads)
    value = float(value) if is_float(x.dtype) else int(value)
    if min(pads) >= 0:
        c.emit("pad", [c.input(0)], pads=grow, value=value, mode=mode)
        return
    y = c.op("pad", [c.input(0)], pads=grow, value=value, mode=mode) if any(grow) else c.input(0)
    shape = c.b.types[y].shape
    slices = tuple((max(0, -pads[i]), shape[i] - max(0, -pads[i + rank]), 1)
                   for i in range(rank))
    c.emit("slice", [y], slices=slices)


@onnx_op("Gather", versions=(13,))
def _gather(c):
    rank = c.type(0).rank
    c.emit("gather", [c.input(0), c.input(1)], axis=c.axis(c.attr("axis", 0), rank))


@onnx_op("Constant", versions=(13, 19, 21, 23, 24, 25))
def _constant(c):
    from onnx import numpy_helper
    attrs = {a.name: a for a in c.node.attribute}
    if "value" in attrs:
        tensor = attrs["value"].t
        dtype_of(c, tensor.data_type, "value dtype")
        array = numpy_helper.to_array(tensor)
    elif "value_float" in attrs or "value_floats" in attrs:
        array = np.asarray(c.attr("value_float", c.attr("value_floats")), np.float32)
    elif "value_int" in attrs or "value_ints" in attrs:
        array = np.asarray(c.attr("value_int", c.attr("value_ints")), np.int64)
    else:
        raise c.fail("attribute", "value, value_float(s) or value_int(s)", sorted(attrs))
    c.constant(array, out=0)


@onnx_op("Shape", versions=(13, 15, 19, 21, 23, 24, 25))
def _shape(c):
    shape = c.type(0).shape
    start, end = c.attr("start", 0), c.attr("end", len(shape))
    c.constant(np.array(shape[slice(start, end)], np.int64), out=0)


@onnx_op("Size", versions=(13, 19, 21, 23, 24, 25))
def _size(c):
    c.constant(np.array(c.type(0).size, np.int64), out=0)


@onnx_op("ConstantOfShape", versions=(9, 20, 21, 23, 24, 25), static_inputs=(0,))
def _constant_of_shape(c):
    from onnx import numpy_helper
    shape = c.ints(0, "input")
    if any(d < 0 for d in shape):
        raise c.fail("shape", "non-negative", shape)
    value = np.zeros(1, np.float32)
    if c.attr("value") is not None:
        tensor = next(a.t for a in c.node.attribute if a.name == "value")
        dtype_of(c, tensor.data_type, "value dtype")
        value = numpy_helper.to_array(tensor).reshape(-1)
    c.constant(np.full(shape, value[0], value.dtype), out=0)


@onnx_op("Range", versions=(11, 27), static_inputs=(0, 1, 2))
def _range(c):
    start, limit, delta = (c.static(i, name) for i, name in
                           enumerate(("start", "limit", "delta")))
    if start is None or limit is None or delta is None or not np.asarray(delta).item():
        raise c.fail("start/limit/delta", "constants with a non-zero delta",
                     (start, limit, delta))
    dtype = np.asarray(start).dtype
    start, limit, delta = (np.float64(v) if dtype.kind == "f" else np.int64(v)
                           for v in (start, limit, delta))
    count = max(int(np.ceil((limit - start) / delta)), 0)
    c.constant((start + np.arange(count) * delta).astype(dtype), out=0)


@onnx_op("Dropout", versions=(13, 22), static_inputs=(1, 2))
def _dropout(c):
    """Inference: the identity, and an all-true mask (training with a non-zero ratio is
    random: refused)."""
    ratio = scalar(c, 1, "ratio", 0.5)
    training = bool(scalar(c, 2, "training_mode", False))
    if training and ratio != 0:
        raise c.fail("training_mode", "false (or ratio 0)", f"true with ratio {ratio}")
    c.bind(0, c.input(0))
    if c.n_outputs > 1 and c.node.output[1]:
        c.constant(np.ones(c.type(0).shape, bool), out=1)

