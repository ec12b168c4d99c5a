"""Normalisations: layer_norm, group_norm (LayerNormalization, GroupNormalization,
InstanceNormalization). Statistics in float32 (ONNX's stash_type 1), the order of operations
of ONNX's function bodies."""
from __future__ import annotations

import numpy as np

from ..ir import TensorType
from ..opdef import OpDef, onnx_op, register
from ..shapes import broadcast_shape, fail, need


def infer_layer_norm(node, types):
    need(node, types, (2, 3))
    x = types[0]
    axis = node.attr("axis")
    tail = x.shape[axis:]
    for t in types[1:]:
        if t is not None and broadcast_shape(node, tail, t.shape) != tail:
            raise fail(node, "scale / bias shape", f"broadcastable to {tail}", t.shape)
    return [x]


def _stats(x, axes):
    """(x - mean, 1 / sqrt(var + eps) without eps) in float32, as ONNX's function body."""
    xf = x.astype(np.float32)
    mean = xf.mean(axis=axes, keepdims=True)
    d = xf - mean
    return mean, d, (d * d).mean(axis=axes, keepdims=True)


def ref_layer_norm(node, x, scale, bias=None):
    axes = tuple(range(node.attr("axis"), x.ndim))
    _, d, var = _stats(x, axes)
    inv = np.float32(1) / np.sqrt(var + np.float32(node.attr("epsilon", 1e-5)))
    y = (d * inv).astype(x.dtype) * scale
    return (y if bias is None else y + bias).astype(x.dtype)


def infer_group_norm(node, types):
    need(node, types, 3)
    x, scale, bias = types
    groups = node.attr("num_groups")
    if x.rank < 2 or x.shape[1] % groups or scale.shape != (x.shape[1],) or \
            bias.shape != (x.shape[1],):
        raise fail(node, "shapes", f"N C ... with C a multiple of {groups} and scale, bias "
                   f"of shape (C,)", [t.shape for t in types])
    return [x]


def ref_group_norm(node, x, scale, bias):
    n, c = x.shape[:2]
    groups = node.attr("num_groups")
    grouped = x.reshape(n, groups, -1)
    _, d, var = _stats(grouped, (2,))
    inv = np.float32(1) / np.sqrt(var + np.float32(node.attr("epsilon", 1e-5)))
    y = (d * inv).reshape(x.shape).astype(x.dtype)
    shape = (1, c) + (1,) * (x.ndim - 2)
    return (y * scale.reshape(shape) + bias.reshape(shape)).astype(x.dtype)


register(
    OpDef("layer_norm", infer_layer_norm, reference=ref_layer_norm,
          doc="normalise over the axes from `axis` on, then * scale + bias"),
    OpDef("group_norm", infer_group_norm, reference=ref_group_norm,
          doc="normalise each of num_groups channel groups, then per-channel scale, bias"),
)


@onnx_op("LayerNormalization", versions=(17,))
def _layer_norm(c):
    if c.attr("stash_type", 1) != 1:
        raise c.fail("stash_type", "1 (float32 statistics)", c.attr("stash_type"))
    x = c.type(0)
    axis = c.axis(c.attr("axis", -1), x.rank)
    eps = c.attr("epsilon", 1e-5)
    c.emit("layer_norm", [c.input(0), c.input(1)] + ([c.input(2)] if c.has(2) else []),
           axis=axis, epsilon=eps)
    if c.n_outputs > 1 and c.node.output[1] or c.n_outputs > 2 and c.node.output[2]:
        _layer_norm_stats(c, axis, eps)


def _layer_norm_stats(c, axis: int, eps: float) -> None:
    """The optional Mean and InvStdDev outputs, as ONNX's function body computes them."""
    x = c.input(0)
    if c.type(0).dtype != "float32":
        x = c.op("cast", [x], dtype="float32")
    axes = tuple(range(axis, c.type(0).rank))
    mean = c.op("reduce", [x], kind="mean", axes=axes, keepdims=1)
    c.bind(1, mean)
    d = c.op("sub", [x, mean])
    var = c.op("reduce", [c.op("mul", [d, d])], kind="mean", axes=axes, keepdims=1)
    std = c.op("sqrt", [c.op("add", [var, c.constant(np.float32(eps), hint="eps")])])
    c.bind(2, c.op("reciprocal", [std]))


@onnx_op("GroupNormalization", versions=(18, 21))
def _group_norm(c):
    """Version 18 scales and shifts per group, version 21 per channel."""
    x = c.type(0)
    groups = c.attr("num_groups")
    if c.attr("stash_type", 1) != 1:
        raise c.fail("stash_type", "1 (float32 statistics)", c.attr("stash_type"))
    scale, bias = c.input(1), c.input(2)
    if c.version < 21:
        per = x.shape[1] // groups
        scale, bias = (c.op("reshape", [c.op("tile", [c.op("reshape", [v], shape=(groups, 1))],
                                              repeats=(1, per))], shape=(x.shape[1],))
                       for v in (scale, bias))
    c.emit("group_norm", [c.input(0), scale, bias], num_groups=groups,
           epsilon=c.attr("epsilon", 1e-5))


@onnx_op("InstanceNormalization", versions=(6, 22))
def _instance_norm(c):
    x = c.type(0)
    c.emit("group_norm", [c.input(0), c.input(1), c.input(2)], num_groups=x.shape[1],
           epsilon=c.attr("epsilon", 1e-5))
