"""Bound inference: the region of each attached stage that its consumers read.

A stage computed at loop L of a parent stage P must produce, for each iteration of the
loops down to L, the union of the elements its consumers read while the loops inside L
run. Consumers are P itself or stages attached at or below L in P.
"""
from __future__ import annotations

from ..errors import ScheduleError
from ..ir.arith import bounds, const_value, linear, simplify, upper_bound
from ..ir.expr import Binary, Const, INT32
from ..ir.visit import walk
from .schedule import Fuse, Split, Stage
from .tensor import TensorRead


def leaf_extents(stage: Stage, root_extents: dict) -> dict:
    """Extent of every IterVar of ``stage`` given its root extents."""
    ext = dict(root_extents)
    for rel in stage.relations:
        if isinstance(rel, Split):
            n = ext[rel.parent]
            if rel.factor is not None:
                ext[rel.inner], ext[rel.outer] = min(rel.factor, n), -(-n // rel.factor)
            else:
                ext[rel.outer], ext[rel.inner] = min(rel.nparts, n), -(-n // rel.nparts)
        else:
            ext[rel.fused] = ext[rel.outer] * ext[rel.inner]
    return ext


def iter_values(stage: Stage, ext: dict) -> dict:
    """Every IterVar's value (root, intermediate, leaf) as an expression of the leaf loops."""
    value = {iv: iv.var for iv in stage.leaf_iter_vars}
    for rel in reversed(stage.relations):
        if isinstance(rel, Split):
            value[rel.parent] = value[rel.outer] * ext[rel.inner] + value[rel.inner]
        else:
            value[rel.outer] = value[rel.fused] // ext[rel.inner]
            value[rel.inner] = value[rel.fused] % ext[rel.inner]
    return {iv: simplify(v) for iv, v in value.items()}


def root_values(stage: Stage, ext: dict) -> dict:
    """Each root IterVar's value as an expression of the leaf loop variables."""
    values = iter_values(stage, ext)
    return {iv: values[iv] for iv in stage.root_iter_vars}


def split_guards(stage: Stage, ext: dict) -> list:
    """IterVars (root or intermediate) whose split leaves a partial last tile."""
    out = []
    for rel in stage.relations:
        if isinstance(rel, Split) and ext[rel.outer] * ext[rel.inner] != ext[rel.parent]:
            out.append(rel.parent)
    return out


class Bounds:
    """Regions (min expression, extent) of every stage and the extents of its loops."""

    def __init__(self, stages: list[Stage], reads: dict):
        self.region: dict = {}
        self.extents: dict = {}
        self.var_ranges: dict = {}
        self.reads = reads      # stage -> list of (consumer stage, TensorRead)
        for stage in reversed(stages):
            if stage.attach[0] == "root":
                self.region[stage] = [(Const(0, INT32), n) for n in stage.op.shape]
            else:
                self.region[stage] = self._infer(stage)
            self._set_extents(stage)

    def _set_extents(self, stage: Stage) -> None:
        root = {iv: n for iv, (_, n) in zip(stage.op.axes, self.region[stage])}
        for iv in getattr(stage.op, "reduce_axes", ()):
            root[iv] = iv.extent
        ext = leaf_extents(stage, root)
        self.extents[stage] = ext
        for iv in stage.leaf_iter_vars:
            self.var_ranges[iv.var] = (Const(0, INT32), Const(ext[iv] - 1, INT32))

    def coords(self, stage: Stage) -> dict:
        """Root Var -> absolute coordinate expression (region min + local value)."""
        values = root_values(stage, self.extents[stage])
        out = {}
        for d, iv in enumerate(stage.op.axes):
            out[iv.var] = simplify(self.region[stage][d][0] + values[iv])
        for iv in getattr(stage.op, "reduce_axes", ()):
            out[iv.var] = values[iv]
        return out

    def _consumer_ranges(self, stage: Stage, parent: Stage, at, consumer: Stage) -> dict:
        leaves = parent.leaf_iter_vars
        pos = leaves.index(at)
        ext = self.extents[parent]
        if consumer is parent:
            inner = {iv.var: (Const(0, INT32), Const(ext[iv] - 1, INT32)) for iv in leaves[pos + 1:]}
            return {v: bounds(c, inner) for v, c in self.coords(parent).items()}
        if consumer.attach[0] == "scope" and consumer.attach[1] is parent \
                and leaves.index(consumer.attach[2]) >= pos:
            cpos = leaves.index(consumer.attach[2])
            relax = {iv.var: (Const(0, INT32), Const(ext[iv] - 1, INT32))
                     for iv in leaves[pos + 1:cpos + 1]}
            ranges = {}
            for d, iv in enumerate(consumer.op.axes):
                lo, n = self.region[consumer][d]
                ranges[iv.var] = (bounds(lo, relax)[0], bounds(lo + (n - 1), relax)[1])
            for iv in getattr(consumer.op, "reduce_axes", ()):
                ranges[iv.var] = (Const(0, INT32), Const(iv.extent - 1, INT32))
            return ranges
        raise ScheduleError(f"stage {stage.name} is computed at {parent.name}.{at.name}, so "
                            f"its consumer {consumer.name} must be {parent.name} or be computed "
                            f"inside that loop, not at {_where(consumer)}")

    def _infer(self, stage: Stage) -> list:
        _, parent, at = stage.attach
        per_dim = [[] for _ in stage.op.shape]
        for consumer, read in self.reads.get(stage, []):
            ranges = self._consumer_ranges(stage, parent, at, consumer)
            for d, idx in enumerate(read.indices):
                per_dim[d].append(bounds(idx, ranges))
        if not any(per_dim):
            raise ScheduleError(f"stage {stage.name} is computed at {parent.name}.{at.name} "
                                f"but nothing reads it there")
        region = []
        for d, pairs in enumerate(per_dim):
            lo = _union(p[0] for p in pairs)
            hi = _union((p[1] for p in pairs), upper=True)
            n = const_value(simplify(hi - lo + 1))
            if n is None:
                n = upper_bound(hi - lo + 1, self.var_ranges)
            region.append((lo, max(1, min(n, stage.op.shape[d]))))
        return region


def _union(exprs, upper: bool = False):
    exprs = list(exprs)
    best = exprs[0]
    for e in exprs[1:]:
        diff = const_value(simplify(e - best))
        if diff is None:
            best = simplify(Binary("max" if upper else "min", best, e))
        elif (diff > 0) == upper and diff != 0:
            best = e
    return best


def _where(stage: Stage) -> str:
    if stage.attach[0] == "scope":
        return f"{stage.attach[1].name}.{stage.attach[2].name}"
    return stage.attach[0]


def collect_reads(stages: list[Stage], stage_of) -> dict:
    """producer stage -> [(consumer stage, TensorRead)] over the consumers' bodies."""
    reads: dict = {}
    for consumer in stages:
        for n in walk(consumer.op.body):
            if isinstance(n, TensorRead):
                reads.setdefault(stage_of(n.tensor), []).append((consumer, n))
    return reads


__all__ = ["Bounds", "collect_reads", "leaf_extents", "root_values", "split_guards", "linear"]
