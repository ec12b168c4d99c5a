"""Broadcasting binary operators, comparisons, logic and `where` (Add, Sub, Mul, Div, Pow,
Mod, Max, Min, Sum, Mean, Equal, Less, Greater, LessOrEqual, GreaterOrEqual, And, Or, Xor,
Not, Where, PRelu)."""
from __future__ import annotations

import numpy as np

from .. import kernels_cpu as N
from .. import kernels_int as I
from .. import kernels_llvm as L
from ..ir import TensorType, is_float
from ..opdef import OpDef, onnx_op, register
from ..shapes import as_bool, broadcast_shape, broadcast_type, fail, need


def _int_div(a, b):
    """Integer division truncating toward zero (C semantics, as ONNX Div)."""
    q = np.floor_divide(a, b)
    return q + ((np.remainder(a, b) != 0) & ((a < 0) ^ (b < 0))).astype(q.dtype)


def ref_div(node, a, b):
    if a.dtype.kind in "iu":
        return _int_div(a, b)
    return np.divide(a, b)


def ref_mod(node, a, b):
    if node.attr("fmod", 0):
        return np.fmod(a, b).astype(a.dtype)
    return np.mod(a, b).astype(a.dtype)


def infer_pow(node, types):
    need(node, types, 2)
    return [TensorType(broadcast_shape(node, types[0].shape, types[1].shape), types[0].dtype)]


def ref_pow(node, x, y):
    if x.dtype.kind == "f":
        return np.power(x, y.astype(x.dtype)).astype(x.dtype)
    return np.power(x.astype(np.float64), y.astype(np.float64)).astype(x.dtype)


def infer_where(node, types):
    need(node, types, 3)
    cond, x, y = types
    if cond.dtype != "bool" or x.dtype != y.dtype:
        raise fail(node, "operand dtypes", "bool, T, T", [t.dtype for t in types])
    return [TensorType(broadcast_shape(node, cond.shape, x.shape, y.shape), x.dtype)]


def infer_logic(node, types):
    if any(t.dtype != "bool" for t in types):
        raise fail(node, "operand dtypes", "bool", [t.dtype for t in types])
    return broadcast_type(node, types)


_NUMPY = {"add": np.add, "sub": np.subtract, "mul": np.multiply}


def _cpu_binary(op):
    def kernel(node, a, b):
        if a.dtype.kind in "iub" and a.dtype != np.int32:
            return _NUMPY[op](a, b).astype(a.dtype)  # other integers wrap in their dtype
        return N.binary(op, a, b)
    return kernel


register(
    OpDef("add", broadcast_type, reference=lambda n, a, b: a + b, cpu=_cpu_binary("add"),
          llvm=L.binary("add"), llvm_when=L.float_only, llvm_exact=True, int8=I.add,
          elementwise=True, epilogue="add",
          doc="a + b (integers wrap; int32 in quantised graphs)"),
    OpDef("sub", broadcast_type, reference=lambda n, a, b: a - b, cpu=_cpu_binary("sub"),
          llvm=L.binary("sub"), llvm_when=L.float_only, llvm_exact=True, int8=I.sub,
          elementwise=True),
    OpDef("mul", broadcast_type, reference=lambda n, a, b: a * b, cpu=_cpu_binary("mul"),
          llvm=L.binary("mul"), llvm_when=L.float_only, llvm_exact=True, int8=I.mul,
          elementwise=True),
    OpDef("div", broadcast_type, reference=ref_div, llvm=L.binary("div"),
          llvm_when=L.float_only, llvm_exact=True, elementwise=True,
          doc="a / b; integers truncate toward zero"),
    OpDef("max", broadcast_type, reference=lambda n, a, b: np.maximum(a, b),
          llvm=L.binary("max"), llvm_when=L.float_only, llvm_exact=True, elementwise=True),
    OpDef("min", broadcast_type, reference=lambda n, a, b: np.minimum(a, b),
          llvm=L.binary("min"), llvm_when=L.float_only, llvm_exact=True, elementwise=True),
    OpDef("pow", infer_pow, reference=ref_pow, elementwise=True,
          doc="x ** y in x's dtype (y of any numeric dtype)"),
    OpDef("mod", broadcast_type, reference=ref_mod, elementwise=True,
          doc="remainder: sign of the divisor (fmod=0) or of the dividend (fmod=1)"),
    OpDef("prelu", broadcast_type,
          reference=lambda n, x, s: np.where(x < 0, x * s, x).astype(x.dtype),
          elementwise=True, doc="x < 0 ? x * slope : x, slope broadcast"),
    OpDef("equal", as_bool, reference=lambda n, a, b: np.equal(a, b), elementwise=True),
    OpDef("less", as_bool, reference=lambda n, a, b: np.less(a, b), elementwise=True),
    OpDef("greater", as_bool, reference=lambda n, a, b: np.greater(a, b), elementwise=True),
    OpDef("less_equal", as_bool, reference=lambda n, a, b: np.less_equal(a, b),
          elementwise=True),
    OpDef("greater_equal", as_bool, reference=lambda n, a, b: np.greater_equal(a, b),
          elementwise=True),
    OpDef("and", infer_logic, reference=lambda n, a, b: np.logical_and(a, b)),
    OpDef("or", infer_logic, reference=lambda n, a, b: np.logical_or(a, b)),
    OpDef("xor", infer_logic, reference=lambda n, a, b: np.logical_xor(a, b)),
    OpDef("where", infer_where, reference=lambda n, c, x, y: np.where(c, x, y),
          elementwise=True, doc="cond ? x : y, broadcast"),
)

_BINARY = {"Add": "add", "Sub": "sub", "Mul": "mul", "Div": "div", "Equal": "equal",
           "Less": "less", "Greater": "greater", "LessOrEqual": "less_equal",
           "GreaterOrEqual": "greater_equal", "And": "and", "Or": "or", "Xor": "xor"}
_VERSIONS = {"Add": (13, 14), "Sub": (13, 14), "Mul": (13, 14), "Div": (13, 14),
             "Equal": (13, 19), "Less": (13,), "Greater": (13,), "LessOrEqual": (12, 16),
             "GreaterOrEqual": (12, 16), "And": (7,), "Or": (7,), "Xor": (7,)}


def _binary_converter(op: str):
    def convert(c):
        c.emit(op, [c.input(0), c.input(1)])
    return convert


for _onnx, _op in _BINARY.items():
    onnx_op(_onnx, versions=_VERSIONS[_onnx])(_binary_converter(_op))


@onnx_op("Pow", versions=(13, 15))
def _pow(c):
    c.emit("pow", [c.input(0), c.input(1)])


@onnx_op("Mod", versions=(13, 28))
def _mod(c):
    """fmod=0 on floats is defined from Mod-28 on (A - floor(A / B) * B)."""
    if is_float(c.type(0).dtype) and not c.attr("fmod", 0) and c.version < 28:
        raise c.fail("fmod", "1 for float operands before Mod-28", 0)
    c.emit("mod", [c.input(0), c.input(1)], fmod=c.attr("fmod", 0))


@onnx_op("PRelu", versions=(9, 16))
def _prelu(c):
    c.emit("prelu", [c.input(0), c.input(1)])


@onnx_op("Where", versions=(9, 16))
def _where(c):
    c.emit("where", [c.input(0), c.input(1), c.input(2)])


def _variadic(op: str):
    """A chain of binary `op` over all inputs (variadic Max, Min, Sum)."""
    def convert(c):
        inputs = [v for v in c.inputs() if v]
        if len(inputs) == 1:
            c.bind(0, inputs[0])
            return
        value = inputs[0]
        for k, other in enumerate(inputs[1:-1]):
            value = c.op(op, [value, other], hint=f"{c.label}_{k}")
        c.emit(op, [value, inputs[-1]])
    return convert


onnx_op("Max", versions=(13,))(_variadic("max"))
onnx_op("Min", versions=(13,))(_variadic("min"))
onnx_op("Sum", versions=(13,))(_variadic("add"))


@onnx_op("Mean", versions=(13,))
def _mean(c):
    inputs = [v for v in c.inputs() if v]
    total = inputs[0]
    for k, other in enumerate(inputs[1:]):
        total = c.op("add", [total, other], hint=f"{c.label}_{k}")
    count = c.constant(np.array(len(inputs), c.type(0).dtype), hint="count")
    c.emit("div", [total, count])
