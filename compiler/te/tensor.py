"""Compute declarations: placeholders, compute with index lambdas, reduction axes and sums."""
from __future__ import annotations

import builtins
import inspect
import itertools
from dataclasses import dataclass, field

from ..errors import ShapeError, CompileError
from ..ir.dtype import DType, dtype_of
from ..ir.expr import Expr, Var, Const, as_expr, select, cast, call, min_expr, max_expr
from ..ir.visit import walk

_uids = itertools.count()


@dataclass(frozen=True, eq=False)
class IterVar:
    """A loop axis: its Var, extent and kind ("spatial" or "reduce")."""
    var: Var
    extent: int
    kind: str = "spatial"

    @property
    def name(self) -> str:
        return self.var.name

    def __repr__(self):
        return f"IterVar({self.name}, {self.extent}, {self.kind})"


for _op in ("__add__", "__radd__", "__sub__", "__rsub__", "__mul__", "__rmul__", "__floordiv__",
            "__mod__", "__lt__", "__le__", "__gt__", "__ge__", "__neg__"):
    setattr(IterVar, _op, lambda self, *a, _op=_op: getattr(self.var, _op)(*a))


@dataclass(frozen=True, repr=False)
class TensorRead(Expr):
    """``tensor[indices]`` inside a compute body (becomes a buffer Load when lowered)."""
    tensor: "Tensor"
    indices: tuple

    @property
    def dtype(self) -> DType:
        return self.tensor.dtype

    def __repr__(self):
        return f"{self.tensor.name}[{', '.join(map(repr, self.indices))}]"


@dataclass(frozen=True, repr=False)
class Reduce(Expr):
    """Commutative reduction ("sum", "min", "max") of ``source`` over reduce axes, starting
    from ``init`` (an expression of the spatial axes; None: the combiner's identity)."""
    combiner: str
    source: Expr
    axes: tuple
    init: Expr | None = None

    @property
    def dtype(self) -> DType:
        return self.source.dtype

    def __repr__(self):
        init = "" if self.init is None else f", init={self.init!r}"
        return f"{self.combiner}({self.source!r}, axis={[a.name for a in self.axes]}{init})"

    def start(self):
        """The value the reduction starts from: ``init``, else the combiner's identity."""
        return self.identity() if self.init is None else self.init

    def identity(self):
        dt = self.dtype
        value = {"sum": 0, "min": dt.max_value, "max": dt.min_value}[self.combiner]
        return Const(float(value) if dt.is_float else value, dt)


class Operation:
    name: str
    shape: tuple
    dtype: DType

    @property
    def output(self) -> "Tensor":
        return self._tensor


class PlaceholderOp(Operation):
    def __init__(self, shape, dtype, name):
        self.name, self.shape, self.dtype = name, shape, dtype
        self.uid = next(_uids)
        self._tensor = Tensor(self)

    @property
    def inputs(self) -> list:
        return []


class ComputeOp(Operation):
    def __init__(self, name, axes: tuple, body: Expr, tag: str = ""):
        self.name, self.axes, self.body, self.tag = name, axes, body, tag
        self.shape = tuple(a.extent for a in axes)
        self.dtype = body.dtype
        self.uid = next(_uids)
        self._tensor = Tensor(self)

    @property
    def reduce_axes(self) -> tuple:
        return self.body.axes if isinstance(self.body, Reduce) else ()

    @property
    def inputs(self) -> list:
        seen = []
        body = self.body        # a reduction's start first: it is computed before the sum
        roots = [body.init, body.source] if isinstance(body, Reduce) and body.init is not None \
            else [body]
        for n in (n for root in roots for n in walk(root)):
            if isinstance(n, TensorRead) and n.tensor not in seen:
                seen.append(n.tensor)
        return seen

    def __repr__(self):
        return f"ComputeOp({self.name})"


class Tensor:
    """The output of an operation; index it to read it in another compute."""

    def __init__(self, op: Operation):
        self.op = op

    name = property(lambda self: self.op.name)
    shape = property(lambda self: self.op.shape)
    dtype = property(lambda self: self.op.dtype)
    ndim = property(lambda self: len(self.op.shape))

    @property
    def axis(self) -> tuple:
        return getattr(self.op, "axes", ())

    def __getitem__(self, indices) -> TensorRead:
        if not isinstance(indices, tuple):
            indices = (indices,)
        if len(indices) != len(self.shape):
            raise ShapeError(f"index of {self.name} must have {len(self.shape)} dimensions, "
                             f"not {len(indices)}")
        out = []
        for dim, (i, n) in enumerate(zip(indices, self.shape)):
            if isinstance(i, IterVar):
                i = i.var
            if isinstance(i, int) and not 0 <= i < n:
                raise ShapeError(f"index {dim} of {self.name} must be in 0..{n - 1}, not {i}")
            out.append(as_expr(i))
        return TensorRead(self, tuple(out))

    def __call__(self, *indices) -> TensorRead:
        return self[indices]

    def __repr__(self):
        return f"Tensor({self.name}, {self.shape}, {self.dtype})"


def _check_shape(shape, what: str) -> tuple:
    if isinstance(shape, int):
        shape = (shape,)
    shape = tuple(shape)
    for n in shape:
        if not isinstance(n, int) or isinstance(n, bool) or n <= 0:
            raise ShapeError(f"{what} shape must be positive integers, not {shape}")
    return shape


def placeholder(shape, dtype="int8", name="placeholder") -> Tensor:
    return PlaceholderOp(_check_shape(shape, name), dtype_of(dtype), name).output


def reduce_axis(extent, name="k") -> IterVar:
    if isinstance(extent, tuple):
        lo, hi = extent
        if lo != 0:
            raise ShapeError(f"reduce_axis range must start at 0, not {lo}")
        extent = hi
    _check_shape((extent,), f"reduce axis {name}")
    return IterVar(Var(name), extent, "reduce")


def compute(shape, fcompute, name="compute", dtype=None, tag="") -> Tensor:
    """Tensor whose element at each index is ``fcompute(*index_vars)``."""
    shape = _check_shape(shape, name)
    nparams = len(inspect.signature(fcompute).parameters)
    varargs = any(p.kind == p.VAR_POSITIONAL
                  for p in inspect.signature(fcompute).parameters.values())
    if not varargs and nparams != len(shape):
        raise ShapeError(f"compute {name} lambda must take {len(shape)} indices, not {nparams}")
    axes = tuple(IterVar(Var(f"{name}.{'ijklmnopqrst'[d] if d < 12 else d}"), n)
                 for d, n in enumerate(shape))
    body = fcompute(*[a.var for a in axes])
    body = as_expr(body)
    if dtype is not None:
        body = cast(dtype, body) if not isinstance(body, Reduce) else body
    for n in walk(body):
        if isinstance(n, Reduce) and n is not body:
            raise CompileError(f"a reduction must be the whole body of compute {name}, "
                               f"not nested inside it")
    return ComputeOp(name, axes, body, tag).output


def sum(expr, axis, init=None) -> Reduce:  # noqa: A001 - te.sum mirrors TVM
    """Sum of ``expr`` over ``axis``, from ``init`` (default 0), TVM's ``te.sum(.., init=)``."""
    return _reduce("sum", expr, axis, init)


def min(a, b=None, axis=None):  # noqa: A001
    return _reduce("min", a, axis) if axis is not None else min_expr(a, b)


def max(a, b=None, axis=None):  # noqa: A001
    return _reduce("max", a, axis) if axis is not None else max_expr(a, b)


def _reduce(combiner: str, expr, axis, init=None) -> Reduce:
    axes = tuple(axis) if isinstance(axis, (list, tuple)) else (axis,)
    for a in axes:
        if not isinstance(a, IterVar) or a.kind != "reduce":
            raise CompileError(f"{combiner} axis must be reduce_axis IterVars, not {a!r}")
    if init is not None:
        init = as_expr(init)
        if any(isinstance(n, Var) and n in {a.var for a in axes} for n in walk(init)):
            raise CompileError(f"{combiner} init must not use the reduce axes "
                               f"{[a.name for a in axes]}, not {init!r}")
    return Reduce(combiner, as_expr(expr), axes, init)


__all__ = ["IterVar", "Tensor", "placeholder", "compute", "reduce_axis", "sum", "min", "max",
           "select", "cast", "call", "builtins"]
