"""Features of a lowered loop-IR function for the autotuner's cost model (XGBoost).

`loop_features(func)` walks the PrimFunc of `te.lower.schedule_to_func` once and returns a
dict with the same keys, in the same order (`feature_names()`), for every function, zero
where a thing is absent, so that rows of different schedules line up in a matrix
(`to_vector`). Every value is ``log2(1 + x)`` of a non-negative quantity ``x`` (counts,
bytes, extents, ratios); ``loop_features(func, raw=True)`` gives the ``x`` themselves.

Executions are exact trip counts: a statement runs (product of the extents of the loops
around it) times. IfThen guards are assumed taken (their statements are counted in
``stores.guarded_execs``); address arithmetic inside Load and Store indices is not counted.

Features (``{s}``: a buffer scope, ``{m}``: every scope but "global", ``{k}``: a loop kind,
thread bindings such as "threadIdx.x" counted as kind "thread"):

- ``bytes_read.{s}``, ``bytes_written.{s}``: element bytes times executions of every Load
  (in stored values, IfThen conditions, Evaluate) and every Store;
- ``footprint.{s}``: allocated bytes (parameters for "global"), one copy per virtual thread;
- ``copy_in.{nests,execs,mean_bytes}.{m}`` and ``copy_out...``: copy nests, the maximal
  loop nests holding only one store whose value is a Load from another scope (through
  Casts and a padding Select with a constant): their number, how often they run and the
  bytes they write per run. Into an SRAM scope (inp, wgt, acc) a nest becomes one DMA
  load, so ``copy_in.execs.inp`` is the number of inp DMAs and ``copy_in.mean_bytes.inp``
  their mean size; out of acc they are the stores to DRAM;
- ``reuse.{m}``: executions of the Loads from buffers in the scope over executions of the
  stores that fill them (stores that do not read-modify-write their own element);
- ``ops.{int,float}.{add,mul,div,other,cast}``: executed arithmetic of stored values by
  dtype (add/sub, mul, div/floordiv/floormod, everything else, casts);
- ``reduction.stores`` (statements), ``reduction.execs``: stores that accumulate into the
  element they read; ``stores.execs``, ``stores.guarded_execs``;
- ``loop.depth`` (deepest For nest), ``loop.total_iters`` (iterations of all loops),
  ``loop.innermost_extent`` / ``loop.outermost_extent`` (the loops around the most executed
  store, the first such store on ties), ``loop.symbolic_extents`` (extents that are not
  constants, counted as 1), ``loop.{k}.count`` and ``loop.{k}.extent_product``.
"""
from __future__ import annotations

import math

import numpy as np

from ..errors import CompileError
from ..ir.arith import const_value
from ..ir.expr import Binary, Call, Cast, Cmp, Const, Load, Not, Select, Var
from ..ir.stmt import (LOOP_KINDS, SCOPES, Allocate, Attr, Evaluate, For, IfThen, Seq,
                       Store)

KINDS = LOOP_KINDS + ("thread",)
ON_CHIP = tuple(s for s in SCOPES if s != "global")
OPS = ("add", "mul", "div", "other", "cast")
_OP_CLASS = {"add": "add", "sub": "add", "mul": "mul", "div": "div", "floordiv": "div",
             "floormod": "div"}


def _names() -> tuple:
    names = []
    for s in SCOPES:
        names += [f"bytes_read.{s}", f"bytes_written.{s}", f"footprint.{s}"]
    for d in ("copy_in", "copy_out"):
        for what in ("nests", "execs", "mean_bytes"):
            names += [f"{d}.{what}.{m}" for m in ON_CHIP]
    names += [f"reuse.{m}" for m in ON_CHIP]
    names += [f"ops.{t}.{op}" for t in ("int", "float") for op in OPS]
    names += ["reduction.stores", "reduction.execs", "stores.execs", "stores.guarded_execs"]
    names += ["loop.depth", "loop.total_iters", "loop.innermost_extent",
              "loop.outermost_extent", "loop.symbolic_extents"]
    for k in KINDS:
        names += [f"loop.{k}.count", f"loop.{k}.extent_product"]
    return tuple(names)


_NAMES = _names()


def feature_names() -> list[str]:
    """The fixed, ordered keys of `loop_features`."""
    return list(_NAMES)


def to_vector(features: dict) -> np.ndarray:
    """``features`` (a `loop_features` dict; other keys ignored) as a float64 vector."""
    try:
        return np.array([features[n] for n in _NAMES], dtype=np.float64)
    except KeyError as e:
        raise CompileError(f"features must have every key of feature_names(), "
                           f"not miss {e.args[0]!r}") from None


def loop_features(func, raw: bool = False) -> dict[str, float]:
    """Features of the PrimFunc ``func`` (log2(1 + x) of each; ``raw``: the x)."""
    w = _Walker()
    for b in func.params:
        w.footprint[b.scope] += b.size * b.dtype.bits
    w.stmt(func.body, 1, 0, 1, False, False)
    x = w.result()
    if raw:
        return {n: float(x.get(n, 0)) for n in _NAMES}
    return {n: math.log2(1.0 + x.get(n, 0)) for n in _NAMES}


def _extent(e) -> int | None:
    if isinstance(e, int):
        return e
    if isinstance(e, Const):
        return int(e.value)
    try:
        v = const_value(e)
    except Exception:          # an extent the affine folder cannot read is symbolic
        v = None
    return None if v is None else int(v)


def _copy_source(store: Store):
    """The Load a copy store copies from another scope, or None."""
    v = store.value
    while True:
        if isinstance(v, Cast):
            v = v.value
        elif isinstance(v, Select) and isinstance(v.f, Const):
            v = v.t
        elif isinstance(v, Select) and isinstance(v.t, Const):
            v = v.f
        else:
            break
    if isinstance(v, Load) and v.buffer.scope != store.buffer.scope:
        return v
    return None


def _chain(s):
    """(store, inner trips) if ``s`` is a nest of loops around one store, else (None, 0)."""
    inner = 1
    while True:
        if isinstance(s, For):
            inner *= max(0, _extent(s.extent) or 1)
            s = s.body
        elif isinstance(s, Attr):
            s = s.body
        elif isinstance(s, IfThen) and s.orelse is None:
            s = s.then
        elif isinstance(s, Store):
            return s, inner
        else:
            return None, 0


class _Walker:
    """One pre-order pass; counts are Python ints (bits for bytes), exact."""

    def __init__(self):
        zero = dict.fromkeys(SCOPES, 0)
        self.read, self.written, self.footprint = dict(zero), dict(zero), dict(zero)
        self.uses, self.fills = dict(zero), dict(zero)
        self.copies = {(d, s): [0, 0, 0] for d in ("copy_in", "copy_out") for s in ON_CHIP}
        self.ops = {f"ops.{t}.{op}": 0 for t in ("int", "float") for op in OPS}
        self.kind_count = dict.fromkeys(KINDS, 0)
        self.kind_product = dict.fromkeys(KINDS, 1)
        self.red_stores = self.red_execs = self.store_execs = self.guarded = 0
        self.depth = self.total_iters = self.symbolic = 0
        self.heaviest = -1
        self.inner_outer = (0, 0)
        self.path: list = []

    # ---- statements -------------------------------------------------------------------
    def stmt(self, s, mult, depth, vt, in_copy, guarded):
        if not in_copy and isinstance(s, (For, Attr, IfThen, Store)):
            store, inner = _chain(s)
            if store is not None:
                src = _copy_source(store)
                if src is not None:
                    self._copy(store.buffer.scope, src.buffer.scope, mult,
                               inner * store.buffer.dtype.bits)
                    in_copy = True
        if isinstance(s, For):
            ext = _extent(s.extent)
            if ext is None:
                ext = 1
                self.symbolic += 1
            ext = max(0, ext)
            kind = s.kind if s.kind in LOOP_KINDS else "thread"
            self.kind_count[kind] += 1
            self.kind_product[kind] *= ext
            self.total_iters += mult * ext
            self.depth = max(self.depth, depth + 1)
            self.path.append(ext)
            self.stmt(s.body, mult * ext, depth + 1, vt * ext if kind == "vthread" else vt,
                      in_copy, guarded)
            self.path.pop()
        elif isinstance(s, Seq):
            for c in s.stmts:
                self.stmt(c, mult, depth, vt, in_copy, guarded)
        elif isinstance(s, Store):
            self._store(s, mult, guarded)
        elif isinstance(s, Allocate):
            b = s.buffer
            self.footprint[b.scope] += b.size * b.dtype.bits * vt
            self.stmt(s.body, mult, depth, vt, in_copy, guarded)
        elif isinstance(s, Attr):
            self.stmt(s.body, mult, depth, vt, in_copy, guarded)
        elif isinstance(s, IfThen):
            self.expr(s.cond, mult, None)
            self.stmt(s.then, mult, depth, vt, in_copy, True)
            if s.orelse is not None:
                self.stmt(s.orelse, mult, depth, vt, in_copy, True)
        elif isinstance(s, Evaluate):
            self.expr(s.value, mult, None)
        elif s is not None:
            raise CompileError(f"statement must be a loop-IR Stmt, not {type(s).__name__}")

    def _copy(self, dst: str, src: str, mult: int, bits: int) -> None:
        for d, scope in (("copy_in", dst), ("copy_out", src)):
            if scope != "global":
                c = self.copies[(d, scope)]
                c[0] += 1
                c[1] += mult
                c[2] += mult * bits

    def _store(self, s: Store, mult: int, guarded: bool) -> None:
        b = s.buffer
        self.written[b.scope] += mult * b.dtype.bits
        self.store_execs += mult
        if guarded:
            self.guarded += mult
        if self.expr(s.value, mult, s):
            self.red_stores += 1
            self.red_execs += mult
        else:
            self.fills[b.scope] += mult
        if mult > self.heaviest:
            self.heaviest = mult
            self.inner_outer = (self.path[-1], self.path[0]) if self.path else (0, 0)

    # ---- expressions ------------------------------------------------------------------
    def expr(self, e, mult: int, store) -> bool:
        """Count ops and reads of ``e`` run ``mult`` times; whether it reads ``store``'s
        own element (a reduction)."""
        ops, read, uses = self.ops, self.read, self.uses
        reduction = False
        stack = [e]
        while stack:
            e = stack.pop()
            t = type(e)
            if t is Load:
                b = e.buffer
                read[b.scope] += mult * b.dtype.bits
                uses[b.scope] += mult
                if store is not None and b is store.buffer and \
                        (e.indices is store.indices or e.indices == store.indices):
                    reduction = True
            elif t is Binary:
                ops[_op_key(e.a.dtype, _OP_CLASS.get(e.op, "other"))] += mult
                stack.append(e.b)
                stack.append(e.a)
            elif t is Cast:
                ops[_op_key(e.dtype, "cast")] += mult
                stack.append(e.value)
            elif t is Cmp:
                ops[_op_key(e.a.dtype, "other")] += mult
                stack.append(e.b)
                stack.append(e.a)
            elif t is Select:
                ops[_op_key(e.t.dtype, "other")] += mult
                stack.extend((e.f, e.t, e.cond))
            elif t is Not:
                ops["ops.int.other"] += mult
                stack.append(e.a)
            elif t is Call:
                ops[_op_key(e.dtype, "other")] += mult
                stack.extend(reversed(e.args))
            elif t is not Const and t is not Var:
                raise CompileError(f"expression must be a loop-IR Expr, not {t.__name__}")
        return reduction

    # ---- results ----------------------------------------------------------------------
    def result(self) -> dict:
        x = {}
        for s in SCOPES:
            x[f"bytes_read.{s}"] = self.read[s] / 8
            x[f"bytes_written.{s}"] = self.written[s] / 8
            x[f"footprint.{s}"] = self.footprint[s] / 8
        for (d, s), (nests, execs, bits) in self.copies.items():
            x[f"{d}.nests.{s}"] = nests
            x[f"{d}.execs.{s}"] = execs
            x[f"{d}.mean_bytes.{s}"] = bits / 8 / execs if execs else 0
        for s in ON_CHIP:
            x[f"reuse.{s}"] = self.uses[s] / self.fills[s] if self.fills[s] else 0
        x.update(self.ops)
        x["reduction.stores"], x["reduction.execs"] = self.red_stores, self.red_execs
        x["stores.execs"], x["stores.guarded_execs"] = self.store_execs, self.guarded
        x["loop.depth"], x["loop.total_iters"] = self.depth, self.total_iters
        x["loop.innermost_extent"], x["loop.outermost_extent"] = self.inner_outer
        x["loop.symbolic_extents"] = self.symbolic
        for k in KINDS:
            x[f"loop.{k}.count"] = self.kind_count[k]
            x[f"loop.{k}.extent_product"] = self.kind_product[k] if self.kind_count[k] else 0
        return x


_KEYS = {(t, op): f"ops.{t}.{op}" for t in ("int", "float") for op in OPS}


def _op_key(dtype, op: str) -> str:
    return _KEYS[("float" if dtype.is_float else "int", op)]
