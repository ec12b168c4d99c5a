"""Elementwise operators with numpy broadcasting, activations and batch norm.

Every operator is a compute over the output shape, scheduled by ``schedule_elementwise``
(last axis vectorised, the rest fused into one parallel loop); broadcast operands become
scalar (splat) loads.
"""
from __future__ import annotations

import numpy as np

from .. import te
from ..errors import ShapeError
from .common import as_array, compiled, schedule_elementwise

BINARY = {"add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b,
          "div": lambda a, b: a / b, "max": te.max, "min": te.min}


def _relu(v):
    return te.max(v, te.cast(v.dtype, 0))


def _sigmoid(v):
    one = te.cast(v.dtype, 1.0)
    return one / (one + te.call("exp", -v))


UNARY = {"relu": _relu, "neg": lambda v: -v, "exp": lambda v: te.call("exp", v),
         "log": lambda v: te.call("log", v), "sqrt": lambda v: te.call("sqrt", v),
         "abs": lambda v: te.call("abs", v), "tanh": lambda v: te.call("tanh", v),
         "sigmoid": _sigmoid}


def broadcast_read(t, out_shape, idx):
    """``t`` read at output index ``idx`` under numpy broadcasting."""
    offset = len(out_shape) - len(t.shape)
    return t[tuple(0 if n == 1 else idx[offset + d] for d, n in enumerate(t.shape))]


def _elementwise(name, arrays, fn, out_dtype=None, target=None):
    arrays = [as_array(a, name="input") for a in arrays]
    dtype = arrays[0].dtype.name
    for a in arrays[1:]:
        if a.dtype.name != dtype:
            raise ShapeError(f"{name} operands must share dtype {dtype}, not {a.dtype}")
    try:
        shape = np.broadcast_shapes(*[a.shape for a in arrays])
    except ValueError:
        raise ShapeError(f"{name} operand shapes must broadcast, not "
                         f"{[a.shape for a in arrays]}") from None
    key = (name, tuple(a.shape for a in arrays), dtype, out_dtype)

    def make():
        ins = [te.placeholder(a.shape, dtype, f"x{k}") for k, a in enumerate(arrays)]

        def body(*i):
            v = fn(*[broadcast_read(t, shape, i) for t in ins])
            return te.cast(out_dtype, v) if out_dtype else v
        out = te.compute(shape, body, name=name)
        s = te.create_schedule(out)
        schedule_elementwise(s, out, target)
        return s, ins + [out], name
    k = compiled(key, make, target)
    out = np.empty(shape, k.plan.params[-1].dtype.numpy)
    k(*arrays, out)
    return out


def binary(op: str, a, b, target=None) -> np.ndarray:
    if op not in BINARY:
        raise ShapeError(f"binary op must be one of {sorted(BINARY)}, not {op!r}")
    return _elementwise(op, [a, b], BINARY[op], target=target)


def unary(op: str, x, target=None) -> np.ndarray:
    if op not in UNARY:
        raise ShapeError(f"unary op must be one of {sorted(UNARY)}, not {op!r}")
    return _elementwise(op, [x], UNARY[op], target=target)


def add(a, b, target=None): return binary("add", a, b, target)
def sub(a, b, target=None): return binary("sub", a, b, target)
def mul(a, b, target=None): return binary("mul", a, b, target)
def div(a, b, target=None): return binary("div", a, b, target)
def maximum(a, b, target=None): return binary("max", a, b, target)
def minimum(a, b, target=None): return binary("min", a, b, target)
def relu(x, target=None): return unary("relu", x, target)
def sigmoid(x, target=None): return unary("sigmoid", x, target)
def exp(x, target=None): return unary("exp", x, target)


def clip(x, lo, hi, target=None) -> np.ndarray:
    x = as_array(x, name="x")
    lo, hi = (float(lo), float(hi)) if x.dtype.kind == "f" else (int(lo), int(hi))
    return _elementwise(f"clip_{lo}_{hi}", [x], lambda v: te.min(
        te.max(v, te.cast(v.dtype, lo)), te.cast(v.dtype, hi)), target=target)


def batch_norm(x, gamma, beta, mean, var, eps=1e-5, target=None) -> np.ndarray:
    """Inference batch norm over axis 1 of an N, C, ... float tensor."""
    x = as_array(x, np.float32, "x")
    c = x.shape[1]
    params = [as_array(p, np.float32, n).reshape((c,) + (1,) * (x.ndim - 2))
              for p, n in ((gamma, "gamma"), (beta, "beta"), (mean, "mean"), (var, "var"))]

    def fn(v, g, b, m, s):
        return (v - m) * (g / te.call("sqrt", s + float(eps))) + b
    return _elementwise(f"batch_norm_{eps}", [x] + params, fn, target=target)
