"""Unary elementwise operators: relu, clip and the activation / math functions (Relu, Clip,
Sigmoid, Tanh, Exp, Log, Sqrt, Erf, Gelu, HardSigmoid, HardSwish, LeakyRelu, Neg, Abs,
Reciprocal, ...). Float functions are computed in the input dtype (erf in float64)."""
from __future__ import annotations

import numpy as np

from .. import kernels_cpu as N
from .. import kernels_int as I
from .. import kernels_llvm as L
from ..ir import TensorType
from ..opdef import OpDef, onnx_op, register
from ..shapes import need, same_type
from .common import scalar


def erf(x: np.ndarray) -> np.ndarray:
    """erf in float64 (Numerical Recipes' erfc Chebyshev fit: relative error < 1.2e-7)."""
    z = np.abs(x.astype(np.float64))
    t = 1.0 / (1.0 + 0.5 * z)
    poly = -z * z - 1.26551223 + t * (1.00002368 + t * (0.37409196 + t * (
        0.09678418 + t * (-0.18628806 + t * (0.27886807 + t * (-1.13520398 + t * (
            1.48851587 + t * (-0.82215223 + t * 0.17087277))))))))
    erfc = t * np.exp(poly)
    return np.where(x >= 0, 1.0 - erfc, erfc - 1.0).astype(x.dtype)


def _sigmoid(x):
    e = np.exp(-np.abs(x))
    return np.where(x >= 0, 1 / (1 + e), e / (1 + e)).astype(x.dtype)


def _gelu(n, x):
    if n.attr("approximate", "none") == "tanh":
        inner = np.sqrt(2 / np.pi) * (x + 0.044715 * x.astype(np.float64) ** 3)
        return (0.5 * x * (1 + np.tanh(inner))).astype(x.dtype)
    return (0.5 * x * (1 + erf(x / np.sqrt(2).astype(x.dtype)))).astype(x.dtype)


def _f(fn):
    """A unary numpy function as a kernel that keeps the input dtype."""
    return lambda n, x: np.asarray(fn(x)).astype(x.dtype)


# op: (ONNX op, schema versions, kernel, LLVM unary op). compiler/cpu's exp and tanh are
# not used: exp flushes float32 denormals, tanh loses relative accuracy near 0.
# EXACT_LLVM: the LLVM unary ops that equal numpy's bit for bit (IEEE-rounded or exact);
# the polynomial exp behind sigmoid and llvm.log differ from numpy's by a few ulp.
EXACT_LLVM = frozenset({"sqrt", "neg", "abs"})
UNARY = {
    "sigmoid": ("Sigmoid", (13,), lambda n, x: _sigmoid(x), "sigmoid"),
    "tanh": ("Tanh", (13,), _f(np.tanh), None),
    "exp": ("Exp", (13,), _f(np.exp), None),
    "log": ("Log", (13,), _f(np.log), "log"),
    "sqrt": ("Sqrt", (13,), _f(np.sqrt), "sqrt"),
    "erf": ("Erf", (13,), lambda n, x: erf(x), None),
    "neg": ("Neg", (13,), _f(np.negative), "neg"),
    "abs": ("Abs", (13,), _f(np.abs), "abs"),
    "reciprocal": ("Reciprocal", (13,), _f(np.reciprocal), None),
    "floor": ("Floor", (13,), _f(np.floor), None),
    "ceil": ("Ceil", (13,), _f(np.ceil), None),
    "round": ("Round", (11, 22), _f(np.round), None),
    "sign": ("Sign", (13,), _f(np.sign), None),
    "sin": ("Sin", (7, 22), _f(np.sin), None),
    "cos": ("Cos", (7, 22), _f(np.cos), None),
    "softplus": ("Softplus", (1, 22), _f(lambda x: np.logaddexp(0, x)), None),
    "softsign": ("Softsign", (1, 22), _f(lambda x: x / (1 + np.abs(x))), None),
    "hard_swish": ("HardSwish", (14, 22),
                   _f(lambda x: x * np.clip(x / 6 + 0.5, 0, 1)), None),
    "mish": ("Mish", (18, 22), _f(lambda x: x * np.tanh(np.logaddexp(0, x))), None),
    "gelu": ("Gelu", (20,), _gelu, None),
}

WITH_ALPHA = {  # op: (ONNX op, versions, attribute defaults, kernel(node, x, **attrs))
    "leaky_relu": ("LeakyRelu", (6, 16), dict(alpha=0.01),
                   lambda x, alpha: np.where(x >= 0, x, x * alpha)),
    "elu": ("Elu", (6, 22), dict(alpha=1.0),
            lambda x, alpha: np.where(x > 0, x, alpha * np.expm1(x))),
    "selu": ("Selu", (6, 22), dict(alpha=1.67326319217681884765625,
                                   gamma=1.05070102214813232421875),
             lambda x, alpha, gamma: gamma * np.where(x > 0, x, alpha * np.expm1(x))),
    "celu": ("Celu", (12, 28), dict(alpha=1.0),
             lambda x, alpha: np.maximum(0, x) + np.minimum(0, alpha * np.expm1(x / alpha))),
    "hard_sigmoid": ("HardSigmoid", (6, 22), dict(alpha=0.2, beta=0.5),
                     lambda x, alpha, beta: np.clip(alpha * x + beta, 0, 1)),
    "thresholded_relu": ("ThresholdedRelu", (10, 22), dict(alpha=1.0),
                         lambda x, alpha: np.where(x > alpha, x, 0)),
    "swish": ("Swish", (24,), dict(alpha=1.0), lambda x, alpha: x * _sigmoid(alpha * x)),
}


def _with_attrs(fn, defaults):
    def kernel(n, x):
        values = {k: np.asarray(n.attr(k, v), x.dtype) for k, v in defaults.items()}
        return np.asarray(fn(x, **values)).astype(x.dtype)
    return kernel


def ref_clip(node, x):
    lo, hi = node.attr("lo"), node.attr("hi")
    return np.clip(x, -np.inf if lo is None else lo, np.inf if hi is None else hi).astype(x.dtype)


def to_bool(node, types):
    need(node, types, 1)
    return [TensorType(types[0].shape, "bool")]


def _isinf(n, x):
    pos, neg = n.attr("detect_positive", 1), n.attr("detect_negative", 1)
    return (np.isposinf(x) & bool(pos)) | (np.isneginf(x) & bool(neg))


register(
    OpDef("relu", same_type, reference=lambda n, x: np.maximum(x, np.zeros((), x.dtype)),
          llvm=L.unary("relu"), llvm_when=L.float_only, llvm_exact=True, quant="clip",
          elementwise=True, clip_bounds=lambda n: (0.0, None)),
    OpDef("clip", same_type, reference=ref_clip, cpu=N.clip, llvm=L.clip,
          llvm_when=L.when_clip, llvm_exact=True, int8=I.clip, quant="clip", elementwise=True,
          clip_bounds=lambda n: (n.attr("lo"), n.attr("hi")), epilogue="clip",
          doc="clip to [lo, hi] (attributes; None: unbounded)"),
    OpDef("is_nan", to_bool, reference=lambda n, x: np.isnan(x)),
    OpDef("is_inf", to_bool, reference=_isinf),
    OpDef("not", to_bool, reference=lambda n, x: np.logical_not(x)),
    *[OpDef(op, same_type, reference=kernel, elementwise=True,
            llvm=L.unary(llvm) if llvm else None, llvm_when=L.float_only if llvm else None,
            llvm_exact=llvm in EXACT_LLVM)
      for op, (_, _, kernel, llvm) in UNARY.items()],
    *[OpDef(op, same_type, reference=_with_attrs(fn, defaults), elementwise=True)
      for op, (_, _, defaults, fn) in WITH_ALPHA.items()],
)


def _unary_converter(op, defaults=None):
    def convert(c):
        attrs = {k: c.attr(k, v) for k, v in (defaults or {}).items()}
        if op == "gelu":
            attrs["approximate"] = c.attr("approximate", "none")
            if attrs["approximate"] not in ("none", "tanh"):
                raise c.fail("approximate", "'none' or 'tanh'", repr(attrs["approximate"]))
        c.emit(op, [c.input(0)], **attrs)
    return convert


for _op, (_onnx, _versions, _, _) in UNARY.items():
    onnx_op(_onnx, versions=_versions)(_unary_converter(_op))
for _op, (_onnx, _versions, _defaults, _) in WITH_ALPHA.items():
    onnx_op(_onnx, versions=_versions)(_unary_converter(_op, _defaults))


@onnx_op("Relu", versions=(13, 14))
def _relu(c):
    c.emit("relu", [c.input(0)])


@onnx_op("IsNaN", versions=(13, 20))
def _isnan(c):
    c.emit("is_nan", [c.input(0)])


@onnx_op("IsInf", versions=(10, 20))
def _isinf_convert(c):
    c.emit("is_inf", [c.input(0)], detect_positive=c.attr("detect_positive", 1),
           detect_negative=c.attr("detect_negative", 1))


@onnx_op("Not", versions=(1,))
def _not(c):
    c.emit("not", [c.input(0)])


@onnx_op("Clip", versions=(13,))
def _clip(c):
    """Constant bounds become one clip node; computed bounds a max / min pair."""
    if c.has(1) and c.const(1) is None or c.has(2) and c.const(2) is None:
        value = c.input(0)
        if c.has(1):
            value = c.op("max", [value, c.input(1)], hint=f"{c.label}_lo")
        if c.has(2):
            value = c.op("min", [value, c.input(2)], hint=f"{c.label}_hi")
        c.bind(0, value)
        return
    lo, hi = scalar(c, 1, "min"), scalar(c, 2, "max")
    c.emit("clip", [c.input(0)], lo=None if lo is None else float(lo),
           hi=None if hi is None else float(hi))
