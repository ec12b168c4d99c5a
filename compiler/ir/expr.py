"""Typed scalar expressions: immutable, structurally comparable, with Python operators.

Integer literals take the dtype of the other operand; float literals become float32
unless the other operand is a float. Mixed dtypes must be cast explicitly.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any

from ..errors import CompileError
from .dtype import DType, dtype_of

_uids = itertools.count()

BINARY_OPS = ("add", "sub", "mul", "div", "floordiv", "floormod", "min", "max",
              "shl", "shr", "and", "or")
CMP_OPS = ("lt", "le", "gt", "ge", "eq", "ne")
INT32 = dtype_of("int32")
BOOL = dtype_of("bool")


class Expr:
    """Base of every expression node; operators build new nodes."""

    dtype: DType

    def __add__(self, o): return _binary("add", self, o)
    def __radd__(self, o): return _binary("add", o, self)
    def __sub__(self, o): return _binary("sub", self, o)
    def __rsub__(self, o): return _binary("sub", o, self)
    def __mul__(self, o): return _binary("mul", self, o)
    def __rmul__(self, o): return _binary("mul", o, self)
    def __truediv__(self, o): return _binary("div", self, o)
    def __floordiv__(self, o): return _binary("floordiv", self, o)
    def __rfloordiv__(self, o): return _binary("floordiv", o, self)
    def __mod__(self, o): return _binary("floormod", self, o)
    def __lshift__(self, o): return _binary("shl", self, o)
    def __rshift__(self, o): return _binary("shr", self, o)
    def __and__(self, o): return _binary("and", self, o)
    def __or__(self, o): return _binary("or", self, o)
    def __neg__(self): return _binary("sub", const(0, self.dtype), self)
    def __invert__(self): return Not(self)
    def __lt__(self, o): return _cmp("lt", self, o)
    def __le__(self, o): return _cmp("le", self, o)
    def __gt__(self, o): return _cmp("gt", self, o)
    def __ge__(self, o): return _cmp("ge", self, o)

    def equal(self, o) -> "Cmp":
        return _cmp("eq", self, o)

    def astype(self, dtype) -> "Expr":
        return cast(dtype, self)

    def __bool__(self):
        raise CompileError(f"an expression must not be used as a Python bool "
                           f"(use select/&/|), not {self!r}")


@dataclass(frozen=True, eq=False, repr=False)
class Var(Expr):
    name: str
    dtype: DType = INT32
    uid: int = field(default_factory=lambda: next(_uids))

    def __eq__(self, other):
        return isinstance(other, Var) and other.uid == self.uid

    def __hash__(self):
        return self.uid

    def __repr__(self):
        return self.name


@dataclass(frozen=True, repr=False)
class Const(Expr):
    value: Any
    dtype: DType = INT32

    def __repr__(self):
        return repr(self.value)


@dataclass(frozen=True, repr=False)
class Binary(Expr):
    op: str
    a: Expr
    b: Expr

    @property
    def dtype(self) -> DType:
        return BOOL if self.op in ("and", "or") and self.a.dtype.is_bool else self.a.dtype

    def __repr__(self):
        from .printer import format_expr
        return format_expr(self)


@dataclass(frozen=True, repr=False)
class Cmp(Expr):
    op: str
    a: Expr
    b: Expr
    dtype: DType = BOOL

    __repr__ = Binary.__repr__


@dataclass(frozen=True, repr=False)
class Not(Expr):
    a: Expr
    dtype: DType = BOOL

    __repr__ = Binary.__repr__


@dataclass(frozen=True, repr=False)
class Select(Expr):
    cond: Expr
    t: Expr
    f: Expr

    @property
    def dtype(self) -> DType:
        return self.t.dtype

    __repr__ = Binary.__repr__


@dataclass(frozen=True, repr=False)
class Cast(Expr):
    dtype: DType
    value: Expr

    __repr__ = Binary.__repr__


@dataclass(frozen=True, repr=False)
class Call(Expr):
    """A pure intrinsic call such as exp, log, sqrt, abs (evaluated per element)."""
    name: str
    args: tuple
    dtype: DType

    __repr__ = Binary.__repr__


@dataclass(frozen=True, repr=False)
class Load(Expr):
    """Read of a Buffer at one index per dimension."""
    buffer: Any
    indices: tuple

    @property
    def dtype(self) -> DType:
        return self.buffer.dtype

    __repr__ = Binary.__repr__


def const(value, dtype=None) -> Const:
    if dtype is None:
        dtype = "bool" if isinstance(value, bool) else \
            "int32" if isinstance(value, int) else "float32"
    dtype = dtype_of(dtype)
    if dtype.is_int and not dtype.min_value <= value <= dtype.max_value:
        raise CompileError(f"constant must fit {dtype} ({dtype.min_value}..{dtype.max_value}), "
                           f"not {value}")
    return Const(float(value) if dtype.is_float else int(value), dtype)


def as_expr(value, like: DType | None = None) -> Expr:
    if isinstance(value, Expr):
        return value
    if isinstance(getattr(value, "var", None), Var):   # an IterVar
        return value.var
    if isinstance(value, bool):
        return const(value, "bool")
    if isinstance(value, int):
        return const(value, like if like is not None and not like.is_bool else INT32)
    if isinstance(value, float):
        return const(value, like if like is not None and like.is_float else "float32")
    raise CompileError(f"operand must be an expression, int or float, not {type(value).__name__}")


def _coerce(a, b) -> tuple[Expr, Expr]:
    like_a = a.dtype if isinstance(a, Expr) else None
    like_b = b.dtype if isinstance(b, Expr) else None
    return as_expr(a, like_b), as_expr(b, like_a)


def _binary(op: str, a, b) -> Expr:
    a, b = _coerce(a, b)
    if a.dtype != b.dtype:
        raise CompileError(f"operands of {op} must have the same dtype, not {a.dtype} and "
                           f"{b.dtype} (cast one of them)")
    return Binary(op, a, b)


def _cmp(op: str, a, b) -> Cmp:
    a, b = _coerce(a, b)
    if a.dtype != b.dtype:
        raise CompileError(f"operands of {op} must have the same dtype, not {a.dtype} and "
                           f"{b.dtype}")
    return Cmp(op, a, b)


def select(cond, t, f) -> Select:
    t, f = _coerce(t, f)
    if t.dtype != f.dtype:
        raise CompileError(f"select branches must have the same dtype, not {t.dtype} and {f.dtype}")
    cond = as_expr(cond)
    if not cond.dtype.is_bool:
        raise CompileError(f"select condition must be bool, not {cond.dtype}")
    return Select(cond, t, f)


def cast(dtype, value) -> Expr:
    dtype = dtype_of(dtype)
    value = as_expr(value, dtype)
    return value if value.dtype == dtype else Cast(dtype, value)


def min_expr(a, b) -> Expr:
    return _binary("min", a, b)


def max_expr(a, b) -> Expr:
    return _binary("max", a, b)


def call(name: str, *args, dtype=None) -> Call:
    args = tuple(as_expr(a) for a in args)
    return Call(name, args, dtype_of(dtype) if dtype is not None else args[0].dtype)
