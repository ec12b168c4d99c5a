"""LLVM intrinsic declarations and math expansions (exp as a vectorisable polynomial)."""
from __future__ import annotations

import llvmlite.ir as ir

from ..errors import CompileError

_CALL_INTRINSICS = {"sqrt": "llvm.sqrt", "abs": "llvm.fabs", "floor": "llvm.floor",
                    "ceil": "llvm.ceil", "round": "llvm.roundeven", "log": "llvm.log",
                    "exp": "llvm.exp", "fma": "llvm.fma"}

# exp(x) = 2^n * p(r), n = round(x log2 e), r = x - n ln2 (|r| <= ln2 / 2), all in FMAs.
# n is rounded by adding 1.5 * 2^23 (its integer lands in the low mantissa bits, so the
# same bits shifted left by 23 give 2^n's exponent field); p is a degree-5 minimax
# polynomial (relative error 7.5e-8 in exact arithmetic; the whole exp measures <= 2 ulp).
_EXP_HI, _EXP_LO = 88.72283935546875, -88.0
_LOG2E = 1.44269504088896341
_LN2_HI, _LN2_LO = 0.6931471824645996, -1.904654323148236e-09
_ROUND = 12582912.0
_EXP_POLY = (0.008325771428644657, 0.041908539831638336, 0.16666938364505768,
             0.49999040365219116, 1.0, 1.0)


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
    """exp(x) for float32 scalars or vectors within 3 ulp, no library call: 0 below about
    -87.7 (no subnormals), inf from about 88.376 (where n reaches 128), NaN stays NaN."""
    t = x.type
    c = lambda v: _splat(t, v)  # noqa: E731
    fma = intrinsic(b.module, "llvm.fma", t, [t] * 3)
    x = b.select(b.fcmp_ordered(">", x, c(_EXP_HI)), c(_EXP_HI), x)
    x = b.select(b.fcmp_ordered("<", x, c(_EXP_LO)), c(_EXP_LO), x)
    biased = b.call(fma, [x, c(_LOG2E), c(_ROUND)])           # n + 1.5 * 2^23
    n = b.fsub(biased, c(_ROUND))
    r = b.call(fma, [n, c(-_LN2_HI), x])
    r = b.call(fma, [n, c(-_LN2_LO), r])
    p = c(_EXP_POLY[0])
    for coeff in _EXP_POLY[1:]:
        p = b.call(fma, [p, r, c(coeff)])
    it = ir.VectorType(ir.IntType(32), t.count) if isinstance(t, ir.VectorType) else ir.IntType(32)
    ci = lambda v: _splat(it, v)  # noqa: E731
    exponent = b.add(b.shl(b.bitcast(biased, it), ci(23)), ci(127 << 23))    # 2^n
    return b.fmul(p, b.bitcast(exponent, t))
