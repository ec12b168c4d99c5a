"""Schedules: how each stage's loops are split, ordered, placed, annotated and stored.

Primitives (TVM's names): split, tile, fuse, reorder, compute_at, compute_inline,
compute_root, cache_read, cache_write, set_scope, unroll, vectorize, parallel, bind,
vthread, pragma, tensorize.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..errors import ScheduleError
from ..ir.expr import Var
from ..ir.stmt import SCOPES, THREAD_TAGS
from ..ir.visit import rebuild, substitute
from .tensor import ComputeOp, IterVar, PlaceholderOp, Reduce, Tensor, TensorRead


@dataclass(frozen=True)
class Split:
    parent: IterVar
    outer: IterVar
    inner: IterVar
    factor: int | None
    nparts: int | None


@dataclass(frozen=True)
class Fuse:
    outer: IterVar
    inner: IterVar
    fused: IterVar


def _ceil(a: int, b: int) -> int:
    return -(-a // b)


class Stage:
    """The schedule of one operation."""

    def __init__(self, op, schedule: "Schedule"):
        self.op = op
        self.schedule = schedule
        self.relations: list = []
        axes = tuple(getattr(op, "axes", ())) + tuple(getattr(op, "reduce_axes", ()))
        self.root_iter_vars = axes
        self.leaf_iter_vars: list[IterVar] = list(axes)
        self.iter_kind: dict = {}
        self.pragmas: dict = {}
        self.tensorize_at: dict = {}
        self.attach = ("root",)
        self.scope = "global"

    name = property(lambda self: self.op.name)
    is_placeholder = property(lambda self: isinstance(self.op, PlaceholderOp))

    def __repr__(self):
        return f"Stage({self.name})"

    # ---- loop structure -----------------------------------------------------------------
    def _leaf(self, ivar: IterVar) -> int:
        if not isinstance(ivar, IterVar) or ivar not in self.leaf_iter_vars:
            raise ScheduleError(f"axis must be a leaf axis of stage {self.name} "
                                f"{[v.name for v in self.leaf_iter_vars]}, not {ivar!r}")
        return self.leaf_iter_vars.index(ivar)

    def split(self, ivar: IterVar, factor: int | None = None, nparts: int | None = None):
        pos = self._leaf(ivar)
        if (factor is None) == (nparts is None):
            raise ScheduleError(f"split of {ivar.name} must give exactly one of factor or "
                                f"nparts, not factor={factor} nparts={nparts}")
        n = factor if factor is not None else nparts
        if not isinstance(n, int) or n <= 0:
            raise ScheduleError(f"split {'factor' if factor else 'nparts'} must be a positive "
                                f"integer, not {n!r}")
        inner_ext = factor if factor is not None else _ceil(ivar.extent, nparts)
        outer_ext = _ceil(ivar.extent, factor) if factor is not None else nparts
        outer = IterVar(Var(f"{ivar.name}.o"), outer_ext, ivar.kind)
        inner = IterVar(Var(f"{ivar.name}.i"), inner_ext, ivar.kind)
        self.relations.append(Split(ivar, outer, inner, factor, nparts))
        self.leaf_iter_vars[pos:pos + 1] = [outer, inner]
        return outer, inner

    def tile(self, x: IterVar, y: IterVar, x_factor: int, y_factor: int):
        xo, xi = self.split(x, x_factor)
        yo, yi = self.split(y, y_factor)
        self.reorder(xo, yo, xi, yi)
        return xo, yo, xi, yi

    def fuse(self, outer: IterVar, inner: IterVar) -> IterVar:
        p, q = self._leaf(outer), self._leaf(inner)
        if q != p + 1:
            raise ScheduleError(f"fused axes must be adjacent, outer first, not {outer.name} "
                                f"at {p} and {inner.name} at {q}")
        if outer.kind != inner.kind:
            raise ScheduleError(f"fused axes must both be {outer.kind}, not {inner.kind}")
        fused = IterVar(Var(f"{outer.name}.{inner.name}.f"), outer.extent * inner.extent,
                        outer.kind)
        self.relations.append(Fuse(outer, inner, fused))
        self.leaf_iter_vars[p:q + 1] = [fused]
        return fused

    def reorder(self, *ivars: IterVar) -> None:
        positions = sorted(self._leaf(v) for v in ivars)
        if len(set(ivars)) != len(ivars):
            raise ScheduleError(f"reorder axes must be distinct, not {[v.name for v in ivars]}")
        for pos, v in zip(positions, ivars):
            self.leaf_iter_vars[pos] = v

    # ---- annotations --------------------------------------------------------------------
    def _annotate(self, ivar, kind):
        self._leaf(ivar)
        self.iter_kind[ivar] = kind

    def unroll(self, ivar): self._annotate(ivar, "unroll")
    def vectorize(self, ivar): self._annotate(ivar, "vectorize")
    def parallel(self, ivar): self._annotate(ivar, "parallel")
    def vthread(self, ivar): self._annotate(ivar, "vthread")

    def bind(self, ivar: IterVar, tag: str) -> None:
        if tag in ("vthread", "cthread"):
            return self.vthread(ivar)
        if tag not in THREAD_TAGS:
            raise ScheduleError(f"thread tag must be one of {THREAD_TAGS + ('vthread',)}, "
                                f"not {tag!r}")
        self._annotate(ivar, tag)

    def pragma(self, ivar: IterVar, key: str, value=True) -> None:
        self._leaf(ivar)
        self.pragmas.setdefault(ivar, []).append((key, value))

    def tensorize(self, ivar: IterVar, intrin) -> None:
        self._leaf(ivar)
        self.tensorize_at[ivar] = intrin

    # ---- placement ----------------------------------------------------------------------
    def compute_at(self, parent: "Stage", ivar: IterVar) -> None:
        parent = self.schedule[parent] if not isinstance(parent, Stage) else parent
        parent._leaf(ivar)
        if parent is self:
            raise ScheduleError(f"compute_at target must be another stage, not {self.name}")
        self.attach = ("scope", parent, ivar)

    def compute_inline(self) -> None:
        if isinstance(self.op.body, Reduce):
            raise ScheduleError(f"inlined stage must not be a reduction, not {self.name}")
        self.attach = ("inline",)

    def compute_root(self) -> None:
        self.attach = ("root",)

    def set_scope(self, scope: str) -> None:
        if scope not in SCOPES:
            raise ScheduleError(f"scope must be one of {SCOPES}, not {scope!r}")
        self.scope = scope


class Schedule:
    """Stages of every operation reachable from the outputs, in topological order."""

    def __init__(self, outputs):
        outputs = [outputs] if isinstance(outputs, Tensor) else list(outputs)
        self.outputs = [t.op for t in outputs]
        self.stages: list[Stage] = []
        self._by_op: dict = {}
        for op in _topo(self.outputs):
            self._add(Stage(op, self))

    def _add(self, stage: Stage, index: int | None = None) -> None:
        if index is None:
            self.stages.append(stage)
        else:
            self.stages.insert(index, stage)
        self._by_op[stage.op] = stage

    def __getitem__(self, key) -> Stage:
        op = key.op if isinstance(key, Tensor) else key
        if isinstance(key, Stage):
            return key
        try:
            return self._by_op[op]
        except (KeyError, TypeError):
            raise ScheduleError(f"tensor must belong to this schedule, not {key!r}") from None

    def stage_of(self, tensor: Tensor) -> Stage:
        return self[tensor]

    def cache_read(self, tensor: Tensor, scope: str, readers) -> Tensor:
        """A copy of ``tensor`` in ``scope`` that ``readers`` read instead."""
        readers = [self[r] for r in (readers if isinstance(readers, (list, tuple)) else [readers])]
        axes = tuple(IterVar(Var(f"{tensor.name}.{scope}.{d}"), n)
                     for d, n in enumerate(tensor.shape))
        op = ComputeOp(f"{tensor.name}.{scope}", axes, TensorRead(tensor, tuple(a.var for a in axes)))
        stage = Stage(op, self)
        stage.set_scope(scope)
        self._add(stage, self.stages.index(self[tensor]) + 1)
        for reader in readers:
            self._replace_reads(reader, tensor, op.output)
        return op.output

    def cache_write(self, tensor: Tensor, scope: str) -> Tensor:
        """Compute ``tensor`` into a new stage in ``scope``; the old stage copies it out."""
        stage = self[tensor]
        if stage.relations or stage.is_placeholder:
            raise ScheduleError(f"cache_write must come before any split of {tensor.name} and "
                                f"apply to a compute, not {stage}")
        old = stage.op
        fresh = tuple(IterVar(Var(f"{a.name}.{scope}"), a.extent) for a in old.axes)
        body = substitute(old.body, {a.var: f.var for a, f in zip(old.axes, fresh)})
        cache = ComputeOp(f"{old.name}.{scope}", fresh, body)
        cstage = Stage(cache, self)
        cstage.set_scope(scope)
        self._add(cstage, self.stages.index(stage))
        copy = ComputeOp(old.name, old.axes, TensorRead(cache.output, tuple(a.var for a in old.axes)))
        stage.op = copy
        stage.root_iter_vars = tuple(old.axes)
        stage.leaf_iter_vars = list(old.axes)
        self._by_op[copy] = stage
        return cache.output

    def _replace_reads(self, stage: Stage, old: Tensor, new: Tensor) -> None:
        src_op = self[old].op

        def swap(n):
            if isinstance(n, TensorRead) and (n.tensor is old or self._by_op.get(n.tensor.op) is self[old]):
                return TensorRead(new, n.indices)
            return None

        op = stage.op
        new_op = ComputeOp(op.name, op.axes, rebuild(op.body, swap), op.tag)
        stage.op = new_op
        self._by_op[new_op] = stage
        del src_op


def create_schedule(outputs) -> Schedule:
    return Schedule(outputs)


def _topo(outputs) -> list:
    order, seen = [], set()

    def visit(op):
        if id(op) in seen:
            return
        seen.add(id(op))
        for t in op.inputs:
            visit(t.op)
        order.append(op)

    for op in outputs:
        visit(op)
    return order
