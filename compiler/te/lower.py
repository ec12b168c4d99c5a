"""Schedule -> loop IR: inline, infer bounds, build each stage's loop nest (schedule_ops)."""
from __future__ import annotations

from ..errors import ScheduleError
from ..ir.arith import simplify, upper_bound, lower_bound
from ..ir.expr import Binary, Cmp, Const, INT32, Load
from ..ir.func import PrimFunc
from ..ir.stmt import Allocate, Attr, Buffer, For, IfThen, Store, seq
from ..ir.visit import rebuild, substitute
from .bound import Bounds, collect_reads, iter_values, root_values, split_guards
from .schedule import Schedule, Stage
from .tensor import Reduce, TensorRead


def schedule_to_func(sch: Schedule, args=None, name: str = "main") -> PrimFunc:
    """Lower a schedule to a PrimFunc whose params are ``args`` (default: inputs, outputs)."""
    return _Lowering(sch).run(args, name)


class _Lowering:
    def __init__(self, sch: Schedule):
        self.sch = sch
        _apply_inline(sch)
        self.stages = [s for s in sch.stages if not s.is_placeholder and s.attach[0] != "inline"]
        self.reads = collect_reads(self.stages, sch.stage_of)
        self.bounds = Bounds(self.stages, self.reads)
        self.buffers: dict = {}
        self.attached: dict = {}
        for st in self.stages:
            if st.attach[0] == "scope":
                self.attached.setdefault((st.attach[1], st.attach[2]), []).append(st)

    def run(self, args, name: str) -> PrimFunc:
        outputs = [self.sch[op.output] for op in self.sch.outputs]
        if args is None:
            inputs = [s for s in self.sch.stages if s.is_placeholder]
            arg_stages = inputs + outputs
        else:
            arg_stages = [self.sch[t] for t in args]
        params = []
        for st in arg_stages:
            buf = Buffer(st.name, st.op.shape, st.op.dtype, "global")
            self.buffers[st] = buf
            params.append(buf)
        for st in self.stages:
            if st not in self.buffers:
                shape = [n for _, n in self.bounds.region[st]]
                self.buffers[st] = Buffer(st.name, shape, st.op.dtype, st.scope)
        roots = [s for s in self.stages if s.attach[0] == "root"]
        body = seq(*[self._nest(s) for s in roots])
        for st in reversed(roots):
            if st not in arg_stages:
                body = Allocate(self.buffers[st], body)
        outs = tuple(self.buffers[s] for s in outputs if s in self.buffers)
        return PrimFunc(name, tuple(params), body, outs)

    # ---- accesses ---------------------------------------------------------------------
    def _load(self, read: TensorRead):
        st = self.sch.stage_of(read.tensor)
        if st not in self.buffers:
            raise ScheduleError(f"tensor {read.tensor.name} must be a function argument or "
                                f"computed by a stage, not missing")
        idx = read.indices
        if st.attach[0] == "scope":
            idx = [simplify(i - lo) for i, (lo, _) in zip(idx, self.bounds.region[st])]
        return Load(self.buffers[st], tuple(idx))

    def _convert(self, expr, coords: dict):
        expr = substitute(expr, coords)
        return rebuild(expr, lambda n: self._load(n) if isinstance(n, TensorRead) else None)

    # ---- loop nests -------------------------------------------------------------------
    def _nest(self, st: Stage):
        ext = self.bounds.extents[st]
        coords = self.bounds.coords(st)
        local = root_values(st, ext)
        buf = self.buffers[st]
        index = tuple(local[iv] if st.attach[0] == "scope" else coords[iv.var]
                      for iv in st.op.axes)
        guard = self._guard(st, ext)
        body = st.op.body
        leaves = st.leaf_iter_vars
        if not isinstance(body, Reduce):
            store = Store(buf, index, self._convert(body, coords))
            return self._loops(st, leaves, _guarded(guard, store), ext)
        r0 = next(k for k, iv in enumerate(leaves) if iv.kind == "reduce")
        if any(iv.kind == "reduce" for iv in leaves[:r0]):
            raise ScheduleError(f"stage {st.name} must have its reduce axes inside")
        init_leaves = [iv for iv in leaves[r0:] if iv.kind != "reduce"]
        spatial_guard = self._guard(st, ext, spatial_only=True)
        start = self._convert(body.start(), coords)
        init = self._loops(st, init_leaves, _guarded(spatial_guard, Store(buf, index, start)),
                           ext, attach=False)
        acc = Load(buf, index)
        update_value = _combine(body.combiner, acc, self._convert(body.source, coords))
        update = self._loops(st, leaves[r0:], _guarded(guard, Store(buf, index, update_value)), ext)
        return self._loops(st, leaves[:r0], seq(init, update), ext)

    def _loops(self, st: Stage, leaves, inner, ext, attach: bool = True):
        body = inner
        for iv in reversed(leaves):
            if attach:
                for child in reversed(self.attached.get((st, iv), [])):
                    body = Allocate(self.buffers[child], seq(self._nest(child), body))
            body = For(iv.var, ext[iv], body, st.iter_kind.get(iv, "serial"))
            if iv in st.tensorize_at:
                body = Attr("tensorize", st.tensorize_at[iv], body)
            for key, value in reversed(st.pragmas.get(iv, [])):
                body = Attr(f"pragma_{key}", value, body)
        return body

    def _guard(self, st, ext, spatial_only: bool = False):
        cond = self._region_guard(st)
        values = iter_values(st, ext)
        for iv in split_guards(st, ext):
            if iv not in values or (spatial_only and iv.kind == "reduce"):
                continue
            c = Cmp("lt", values[iv], Const(ext[iv], INT32))
            cond = c if cond is None else Binary("and", cond, c)
        return cond


    def _region_guard(self, st):
        """Conditions keeping an attached stage's coordinates inside its tensor's shape."""
        if st.attach[0] != "scope":
            return None
        cond = None
        coords = self.bounds.coords(st)
        for d, iv in enumerate(st.op.axes):
            lo, n = self.bounds.region[st][d]
            c = coords[iv.var]
            checks = []
            if lower_bound(lo, self.bounds.var_ranges) < 0:
                checks.append(Cmp("ge", c, Const(0, INT32)))
            if upper_bound(lo + (n - 1), self.bounds.var_ranges) >= st.op.shape[d]:
                checks.append(Cmp("lt", c, Const(st.op.shape[d], INT32)))
            for chk in checks:
                cond = chk if cond is None else Binary("and", cond, chk)
        return cond


def _guarded(cond, stmt):
    return stmt if cond is None else IfThen(cond, stmt)


def _combine(combiner: str, a, b):
    return Binary({"sum": "add", "min": "min", "max": "max"}[combiner], a, b)


def _apply_inline(sch: Schedule) -> None:
    """Substitute the bodies of inlined stages into their readers (in topological order)."""
    for st in sch.stages:
        if st.attach[0] != "inline":
            continue
        op = st.op

        def expand(n, op=op, st=st):
            if isinstance(n, TensorRead) and sch.stage_of(n.tensor) is st:
                return substitute(op.body, {a.var: i for a, i in zip(op.axes, n.indices)})
            return None

        for reader in sch.stages:
            if reader is st or reader.is_placeholder:
                continue
            body = rebuild(reader.op.body, expand)
            if body is not reader.op.body:
                reader.op.body = body
