"""Reductions: reduce (mean, max, min, sum, prod, l1, l2, sum_square, log_sum,
log_sum_exp), argmax / argmin, softmax, log_softmax (ReduceMean, ReduceMax, ..., ArgMax,
ArgMin, Softmax, LogSoftmax)."""
from __future__ import annotations

import numpy as np

from .. import kernels as K
from .. import kernels_cpu as N
from .. import kernels_llvm as L
from .. import tune_tasks as T
from ..ir import TensorType
from ..opdef import OpDef, onnx_op, register
from ..shapes import fail, need, same_type

KINDS = ("mean", "max", "min", "sum", "prod", "l1", "l2", "sum_square", "log_sum",
         "log_sum_exp")


def _reduced_shape(shape, axes, keepdims):
    if keepdims:
        return tuple(1 if i in axes else d for i, d in enumerate(shape))
    return tuple(d for i, d in enumerate(shape) if i not in axes)


def infer_reduce(node, types):
    need(node, types, 1)
    x = types[0]
    axes = tuple(node.attr("axes"))
    if node.attr("kind") not in KINDS or any(not 0 <= a < x.rank for a in axes):
        raise fail(node, "kind / axes", f"one of {KINDS} over axes of a rank-{x.rank} tensor",
                   (node.attr("kind"), axes))
    return [TensorType(_reduced_shape(x.shape, axes, node.attr("keepdims", 1)), x.dtype)]


def _low(dtype):
    if dtype.kind == "b":
        return False
    return np.iinfo(dtype).min if dtype.kind in "iu" else -np.inf


def _high(dtype):
    if dtype.kind == "b":
        return True
    return np.iinfo(dtype).max if dtype.kind in "iu" else np.inf


def ref_reduce(node, x):
    kind, axes, keep = node.attr("kind"), tuple(node.attr("axes")), bool(node.attr("keepdims", 1))
    if kind == "max":
        out = np.max(x, axis=axes, keepdims=keep, initial=_low(x.dtype))
    elif kind == "min":
        out = np.min(x, axis=axes, keepdims=keep, initial=_high(x.dtype))
    elif kind == "mean":
        out = np.mean(x, axis=axes, keepdims=keep)
    elif kind == "prod":
        out = np.prod(x, axis=axes, keepdims=keep)
    elif kind == "l1":
        out = np.sum(np.abs(x), axis=axes, keepdims=keep)
    elif kind == "l2":
        out = np.sqrt(np.sum(x * x, axis=axes, keepdims=keep))
    elif kind == "sum_square":
        out = np.sum(x * x, axis=axes, keepdims=keep)
    elif kind == "log_sum":
        with np.errstate(divide="ignore"):
            out = np.log(np.sum(x, axis=axes, keepdims=keep))
    elif kind == "log_sum_exp":
        with np.errstate(divide="ignore"):
            out = np.log(np.sum(np.exp(x), axis=axes, keepdims=keep))
    else:
        out = np.sum(x, axis=axes, keepdims=keep)
    return np.asarray(out).astype(x.dtype)


def infer_arg(node, types):
    need(node, types, 1)
    x = types[0]
    axis = node.attr("axis")
    return [TensorType(_reduced_shape(x.shape, (axis,), node.attr("keepdims", 1)), "int64")]


def ref_arg(node, x):
    axis = node.attr("axis")
    pick = np.argmax if node.attr("kind") == "max" else np.argmin
    if node.attr("select_last_index", 0):
        out = x.shape[axis] - 1 - pick(np.flip(x, axis), axis=axis)
    else:
        out = pick(x, axis=axis)
    if node.attr("keepdims", 1):
        out = np.expand_dims(out, axis)
    return out.astype(np.int64)


def ref_log_softmax(node, x):
    axis = node.attr("axis", -1)
    shifted = x - x.max(axis=axis, keepdims=True)
    return (shifted - np.log(np.exp(shifted).sum(axis=axis, keepdims=True))).astype(x.dtype)


register(
    OpDef("reduce", infer_reduce, reference=ref_reduce,
          doc=f"reduce axes with one of {KINDS} (empty sets: the identity of the kind)"),
    OpDef("arg", infer_arg, reference=ref_arg,
          doc="argmax / argmin (kind) along axis, first or last (select_last_index) index"),
    OpDef("softmax", same_type, reference=lambda n, x: K.softmax(x, n.attr("axis", -1)),
          cpu=lambda n, x: N.softmax(x, n.attr("axis", -1)), llvm=L.softmax,
          llvm_when=L.when_softmax, tune=T.softmax),
    OpDef("log_softmax", same_type, reference=ref_log_softmax),
)

_REDUCE = {"ReduceMean": ("mean", (13, 18)), "ReduceMax": ("max", (13, 18, 20)),
           "ReduceMin": ("min", (13, 18, 20)), "ReduceSum": ("sum", (13,)),
           "ReduceProd": ("prod", (13, 18)), "ReduceL1": ("l1", (13, 18)),
           "ReduceL2": ("l2", (13, 18)), "ReduceSumSquare": ("sum_square", (13, 18)),
           "ReduceLogSum": ("log_sum", (13, 18, 28)),
           "ReduceLogSumExp": ("log_sum_exp", (13, 18, 28))}


def _reduce_converter(kind: str, op_type: str):
    """Axes are an attribute before opset 18 (ReduceSum: before 13), an input after."""
    def convert(c):
        x = c.type(0)
        axes_input = c.version >= 18 or op_type == "ReduceSum"
        axes = c.ints(1, "axes") if axes_input else c.attr("axes")
        if not axes:
            if c.attr("noop_with_empty_axes", 0):
                c.bind(0, c.input(0))
                return
            axes = range(x.rank)
        axes = tuple(sorted({c.axis(int(a), x.rank, "axes") for a in axes}))
        c.emit("reduce", [c.input(0)], kind=kind, axes=axes, keepdims=c.attr("keepdims", 1))
    return convert


for _onnx, (_kind, _versions) in _REDUCE.items():
    onnx_op(_onnx, versions=_versions, static_inputs=(1,))(_reduce_converter(_kind, _onnx))


def _arg_converter(kind: str):
    def convert(c):
        axis = c.axis(c.attr("axis", 0), c.type(0).rank)
        c.emit("arg", [c.input(0)], kind=kind, axis=axis, keepdims=c.attr("keepdims", 1),
               select_last_index=c.attr("select_last_index", 0))
    return convert


onnx_op("ArgMax", versions=(13,))(_arg_converter("max"))
onnx_op("ArgMin", versions=(13,))(_arg_converter("min"))


@onnx_op("Softmax", versions=(13,))
def _softmax(c):
    c.emit("softmax", [c.input(0)], axis=c.axis(c.attr("axis", -1), c.type(0).rank))


@onnx_op("LogSoftmax", versions=(13,))
def _log_softmax(c):
    c.emit("log_softmax", [c.input(0)], axis=c.axis(c.attr("axis", -1), c.type(0).rank))
