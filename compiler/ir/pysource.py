"""Python source for expressions and statements: the engine of ``evaluate`` and ``interp``."""
from __future__ import annotations

import math

from ..errors import CompileError
from .expr import Expr, Var, Const, Binary, Cmp, Not, Select, Cast, Call, Load
from .dtype import DType

_OPS = {"add": "+", "sub": "-", "mul": "*", "div": "/", "floordiv": "//", "floormod": "%",
        "shl": "<<", "shr": ">>"}
_CMPS = {"lt": "<", "le": "<=", "gt": ">", "ge": ">=", "eq": "==", "ne": "!="}
_CALLS = {"exp": "math.exp", "log": "math.log", "sqrt": "math.sqrt", "abs": "abs",
          "tanh": "math.tanh", "floor": "math.floor", "ceil": "math.ceil",
          "round": "round"}   # half to even, as llvm.roundeven


class Namer:
    """Python names for Vars and Buffers inside one generated function."""

    def __init__(self, var_expr=None):
        self.names: dict = {}
        self.var_expr = var_expr

    def var(self, v: Var) -> str:
        if self.var_expr is not None:
            return self.var_expr(v)
        return self._name(v, f"v_{_clean(v.name)}_{v.uid}")

    def buffer(self, b) -> str:
        return self._name(b, f"b_{_clean(b.name)}_{b.uid}")

    def _name(self, key, name) -> str:
        return self.names.setdefault(key, name)


def _clean(name: str) -> str:
    return "".join(c if c.isalnum() else "_" for c in name)


def wrap_fn(dtype: DType):
    return dtype.wrap


def expr_source(e: Expr, names: Namer) -> str:
    src = lambda x: expr_source(x, names)  # noqa: E731
    if isinstance(e, Var):
        return names.var(e)
    if isinstance(e, Const):
        return repr(e.value)
    if isinstance(e, Binary):
        if e.op in _OPS:
            return f"({src(e.a)} {_OPS[e.op]} {src(e.b)})"
        if e.op in ("min", "max"):
            return f"{e.op}({src(e.a)}, {src(e.b)})"
        if e.op in ("and", "or"):
            joiner = e.op if e.dtype.is_bool else {"and": "&", "or": "|"}[e.op]
            return f"({src(e.a)} {joiner} {src(e.b)})"
    if isinstance(e, Cmp):
        return f"({src(e.a)} {_CMPS[e.op]} {src(e.b)})"
    if isinstance(e, Not):
        return f"(not {src(e.a)})"
    if isinstance(e, Select):
        return f"({src(e.t)} if {src(e.cond)} else {src(e.f)})"
    if isinstance(e, Cast):
        return f"_wrap_{e.dtype}({src(e.value)})"
    if isinstance(e, Call):
        if e.name not in _CALLS:
            raise CompileError(f"call must be one of {sorted(_CALLS)}, not {e.name!r}")
        return f"{_CALLS[e.name]}({', '.join(src(a) for a in e.args)})"
    if isinstance(e, Load):
        idx = ", ".join(src(i) for i in e.indices)
        return f"{names.buffer(e.buffer)}[{idx}]"
    raise CompileError(f"expression must be a known node, not {type(e).__name__}")


def base_globals() -> dict:
    from .dtype import _KINDS, dtype_of
    g = {"math": math}
    for kind, widths in _KINDS.items():
        for bits in widths:
            name = "bool" if kind == "bool" else f"{kind}{bits}"
            g[f"_wrap_{name}"] = dtype_of(name).wrap
    return g


def _env_lambda(e: Expr, source, g: dict, wrap: str = "{}"):
    """``lambda env: wrap(source(e))`` with each Var read as ``env[var]``."""
    keys: list = []

    def var_expr(v):
        if v not in keys:
            keys.append(v)
        return f"env[_k{keys.index(v)}]"

    body = source(e, Namer(var_expr))
    for i, k in enumerate(keys):
        g[f"_k{i}"] = k
    return eval(f"lambda env: {wrap.format(body)}", g)


def compile_expr(e: Expr):
    """A function env -> value for an expression whose Loads are not allowed."""
    return _env_lambda(e, expr_source, base_globals())


def _vector_source(e: Expr, names: Namer) -> str:
    """Source evaluating ``e`` elementwise when some Vars are numpy arrays (broadcasting).

    Only nodes whose numpy spelling means exactly what the scalar source means: integer
    arithmetic, comparisons, bool and/or/not as & | ~, min/max, select."""
    src = lambda x: _vector_source(x, names)  # noqa: E731
    if isinstance(e, Var):
        return names.var(e)
    if isinstance(e, Const) and not e.dtype.is_float:
        return repr(e.value)
    if isinstance(e, Binary) and not e.dtype.is_float:
        if e.op in _OPS and e.op != "div":
            return f"({src(e.a)} {_OPS[e.op]} {src(e.b)})"
        if e.op in ("min", "max"):
            return f"_np.{e.op}imum({src(e.a)}, {src(e.b)})"
        if e.op in ("and", "or"):
            return f"({src(e.a)} {'&' if e.op == 'and' else '|'} {src(e.b)})"
    if isinstance(e, Cmp) and not e.a.dtype.is_float:
        return f"({src(e.a)} {_CMPS[e.op]} {src(e.b)})"
    if isinstance(e, Not) and e.a.dtype.is_bool:
        return f"(~_np.asarray({src(e.a)}, bool))"
    if isinstance(e, Select):
        return f"_np.where({src(e.cond)}, {src(e.t)}, {src(e.f)})"
    raise CompileError(f"expression must be integer/bool arithmetic to vectorise, "
                       f"not {type(e).__name__}")


def compile_expr_vector(e: Expr):
    """A function env -> numpy value of an integer/bool expression whose Vars may be bound
    to integer arrays (results broadcast); CompileError for nodes it cannot vectorise."""
    import numpy as np

    return _env_lambda(e, _vector_source, {"_np": np}, "_np.asarray({})")
