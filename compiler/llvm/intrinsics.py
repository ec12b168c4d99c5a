"""LLVM intrinsic declarations and math expansions (exp as a vectorisable polynomial)."""
from __future__ import annotations

import llvmlite.ir as ir

from ..errors import CompileError

_CALL_INTRINSICS = {"sqrt": "llvm.sqrt", "abs": "llvm.fabs", "floor": "llvm.floor",
                    "ceil": "llvm.ceil", "round": "llvm.roundeven", "log": "llvm.log",
                    "exp": "llvm.exp", "fma": "llvm.fma"}

# Cephes expf: exp(x) = 2^n * p(r), r = x - n ln2, |r| <= ln2 / 2.
_EXP_HI, _EXP_LO = 88.3762626647949, -88.0
_LOG2E, _LN2_HI, _LN2_LO = 1.44269504088896341, 0.693359375, -2.12194440e-4
_EXP_POLY = (1.9875691500e-4, 1.3981999507e-3, 8.3334519073e-3, 4.1665795894e-2,
             1.6666665459e-1, 5.0000001201e-1)


def _suffix(t: ir.Type) -> str:
    if isinstance(t, ir.VectorType):
        return f"v{t.count}{_suffix(t.element)}"
    if isinstance(t, ir.IntType):
        return f"i{t.width}"
    return {"half": "f16", "float": "f32", "double": "f64", "ptr": "p0"}[str(t)]


def intrinsic(module: ir.Module, name: str, ret: ir.Type, args: list, overload=None):
    """Get or declare ``name`` mangled with the overload types (default: the return type)."""
    overload = [ret] if overload is None else overload
    full = name + "".join("." + _suffix(t) for t in overload)
    if full in module.globals:
        return module.globals[full]
    return ir.Function(module, ir.FunctionType(ret, args), name=full)


def call_unary(builder: ir.IRBuilder, name: str, value):
    """``llvm.<name>`` on a float scalar or vector."""
    fn = intrinsic(builder.module, name, value.type, [value.type])
    return builder.call(fn, [value])


def math_call(builder: ir.IRBuilder, name: str, args: list, fast_exp: bool = True):
    """A loop-IR Call on float operands."""
    if name == "exp" and fast_exp and _is_f32(args[0].type):
        return fast_exp_f32(builder, args[0])
    if name == "tanh":
        two = _splat(args[0].type, 2.0)
        e = math_call(builder, "exp", [builder.fmul(args[0], two)], fast_exp)
        one = _splat(args[0].type, 1.0)
        return builder.fsub(one, builder.fdiv(two, builder.fadd(e, one)))
    if name == "fma":
        fn = intrinsic(builder.module, "llvm.fma", args[0].type, [args[0].type] * 3)
        return builder.call(fn, args)
    if name not in _CALL_INTRINSICS:
        raise CompileError(f"call must be one of {sorted(_CALL_INTRINSICS) + ['tanh']}, "
                           f"not {name!r}")
    return call_unary(builder, _CALL_INTRINSICS[name], args[0])


def _is_f32(t) -> bool:
    t = t.element if isinstance(t, ir.VectorType) else t
    return isinstance(t, ir.FloatType)


def _splat(t: ir.Type, value):
    if isinstance(t, ir.VectorType):
        return ir.Constant(t, [ir.Constant(t.element, value)] * t.count)
    return ir.Constant(t, value)


def fast_exp_f32(b: ir.IRBuilder, x):
    """exp(x) for float32 scalars or vectors, within ~2 ulp, no library call."""
    t = x.type
    c = lambda v: _splat(t, v)  # noqa: E731
    x = b.select(b.fcmp_ordered(">", x, c(_EXP_HI)), c(_EXP_HI), x)
    x = b.select(b.fcmp_ordered("<", x, c(_EXP_LO)), c(_EXP_LO), x)
    n = call_unary(b, "llvm.floor", b.fadd(b.fmul(x, c(_LOG2E)), c(0.5)))
    r = b.fsub(b.fsub(x, b.fmul(n, c(_LN2_HI))), b.fmul(n, c(_LN2_LO)))
    p = c(_EXP_POLY[0])
    for coeff in _EXP_POLY[1:]:
        p = b.fadd(b.fmul(p, r), c(coeff))
    p = b.fadd(b.fadd(b.fmul(p, b.fmul(r, r)), r), c(1.0))
    it = ir.VectorType(ir.IntType(32), t.count) if isinstance(t, ir.VectorType) else ir.IntType(32)
    ci = lambda v: _splat(it, v)  # noqa: E731
    bits = b.shl(b.add(b.fptosi(n, it), ci(127)), ci(23))
    return b.fmul(p, b.bitcast(bits, t))
