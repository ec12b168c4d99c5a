"""A reduction's first step overwrites the accumulator instead of following a reset pass.

A tensorized reduction is a reset nest (one GEMM_RESET micro-op per acc entry, acc := 0)
and, after the loads, the update nest (acc += inp x wgt over the reduction loops). The
reset micro-ops take the compute module's issue slot like any other: one cycle per output
entry of every tile. Here the reset nest goes; the first update step (every reduction loop
at 0) becomes a GEMM_OVERWRITE nest (acc := inp x wgt, once per entry) and the rest of the
reduction runs as before, split into nests that skip that step:

    for s: acc[s] = 0                         for s: acc[s] := inp[s, 0] x wgt[0]
    for r in 0..R: for s: acc[s] += ..   ->   for r in 1..R: for s: acc[s] += ..

Reduction loops between the reset and the update (the outer channel tiles, whose bodies
hold the loads) have their first iteration peeled. Integer sums wrap modulo 2**acc_bits,
so the new order gives the same bits. Anything else (an entry the first step does not
write exactly once, the acc touched in between, an index that is not affine in its loops)
keeps its reset pass.

Every reduction is rewritten. With several loops in the tile (a 3x3 conv's channels, kh,
kw) the split adds a GEMM instruction and a micro-op kernel per step; on ResNet-18's RTL
that paid once a thread's split step stayed together (inject_vthread groups consecutive
compute statements per thread): conv_11 486,878 -> 469,953 cycles, the model 7,638,519 ->
7,592,954; before that grouping those layers were 0.6-4% slower. The pipeline's option
"reset_multi_loop" (``overwrite_first_step(.., multi_loop=False)``) keeps the reset pass
of such reductions (the 7x7 512-channel layers are 0.2-1% faster with it).
"""
from __future__ import annotations

import dataclasses

import numpy as np

from ...ir.expr import Const, Var
from ...ir.stmt import Allocate, For, Seq, seq
from ...ir.visit import free_vars, substitute, walk
from ..nodes import Gemm, VtaStmt
from .common import coefficients, perfect_nest, rewrite_top_down, without_vars


def overwrite_first_step(func, cfg, multi_loop: bool = True):
    def fn(node):                   # a sequence: its statements first, then their pairs
        if isinstance(node, Seq):
            return seq(*_fuse([rewrite_top_down(s, fn) for s in node.stmts], multi_loop))
        return None

    return func.with_body(rewrite_top_down(func.body, fn))


def _fuse(stmts: list, multi_loop: bool) -> list:
    out = list(stmts)
    for i, stmt in enumerate(stmts):
        reset = _reset_nest(stmt)
        if reset is None:
            continue
        j = next((j for j in range(i + 1, len(out)) if _touches(out[j], reset.acc)), None)
        if j is None:
            continue
        peeled = _peel(out[j], reset, multi_loop)
        if peeled is not None:
            out[i], out[j] = None, peeled
    return [s for s in out if s is not None]


def _reset_nest(stmt):
    loops, attrs, leaf = perfect_nest(stmt)
    if attrs or not isinstance(leaf, Gemm) or not leaf.reset:
        return None
    entries = _entries(leaf.acc_index, loops)
    if entries is None or len(set(entries)) != len(entries):
        return None
    return _Reset(leaf.acc, frozenset(entries))


@dataclasses.dataclass(frozen=True)
class _Reset:
    acc: object
    entries: frozenset


def _touches(node, buffer) -> bool:
    return any(isinstance(n, VtaStmt) and any(getattr(n, f, None) == buffer
                                              for f in ("acc", "inp", "wgt", "sram", "src"))
               for n in walk(node))


def _peel(node, reset: _Reset, multi_loop: bool):
    """``node`` with its first update of ``reset.acc`` overwriting, or None if unsafe (or,
    without ``multi_loop``, a reduction with several loops in the tile)."""
    if isinstance(node, Seq):
        k = next(k for k, s in enumerate(node.stmts) if _touches(s, reset.acc))
        first = _peel(node.stmts[k], reset, multi_loop)
        return None if first is None else seq(*node.stmts[:k], first, *node.stmts[k + 1:])
    if isinstance(node, Allocate):
        body = _peel(node.body, reset, multi_loop)
        return None if body is None else Allocate(node.buffer, body, node.base)
    loops, attrs, leaf = perfect_nest(node)
    if not attrs and isinstance(leaf, Gemm) and leaf.acc == reset.acc and not leaf.reset:
        return _split_update(loops, leaf, reset, multi_loop)
    if isinstance(node, For) and not _in_acc_index(node, reset.acc):
        first = _peel(substitute(node.body, {node.var: Const(0, node.var.dtype)}), reset,
                      multi_loop)
        if first is None or node.extent == 1:
            return first
        var = Var(node.var.name, node.var.dtype)
        rest = substitute(node.body, {node.var: var + 1})
        return seq(first, For(var, node.extent - 1, rest, node.kind))
    return None


def _in_acc_index(loop: For, acc) -> bool:
    return any(isinstance(n, Gemm) and n.acc == acc and loop.var in free_vars(n.acc_index)
               for n in walk(loop.body))


def _split_update(loops, leaf: Gemm, reset: _Reset, multi_loop: bool):
    acc_vars = free_vars(leaf.acc_index)
    spatial = [lp for lp in loops if lp.var in acc_vars]
    reduction = [lp for lp in loops if lp.var not in acc_vars]
    inner = [lp for lp in reduction if lp.extent > 1]
    if not multi_loop and len(inner) > 1:
        return None
    zero = {lp.var: Const(0, lp.var.dtype) for lp in reduction}
    first_leaf = dataclasses.replace(substitute(leaf, zero), overwrite=True)
    entries = _entries(first_leaf.acc_index, spatial)
    if entries is None or len(entries) != len(reset.entries) or \
            set(entries) != reset.entries:
        return None
    parts = [_nest(spatial, first_leaf)]
    for j, lp in enumerate(reduction):          # every step but the first, in order
        if lp.extent == 1:
            continue
        var = Var(lp.var.name, lp.var.dtype)
        mapping = {r.var: Const(0, r.var.dtype) for r in reduction[:j]}
        mapping[lp.var] = var + 1
        nest = [(var, lp.extent - 1, lp.kind) if loop is lp else (loop.var, loop.extent, loop.kind)
                for loop in loops if loop is lp or loop.var not in mapping]
        parts.append(_nest(nest, substitute(leaf, mapping)))
    return seq(*parts)


def _nest(loops, leaf):
    """``leaf`` inside loops given as For nodes or (var, extent, kind), outermost first."""
    body = leaf
    for lp in reversed(loops):
        var, extent, kind = (lp.var, lp.extent, lp.kind) if isinstance(lp, For) else lp
        body = For(var, extent, body, kind)
    return body


def _entries(index, loops):
    """Every acc entry ``index`` takes over ``loops``, or None if it is not affine in them
    alone."""
    variables = [lp.var for lp in loops]
    if not free_vars(index) <= set(variables):
        return None
    try:
        coeffs = coefficients(index, variables)
    except Exception:
        return None
    base = without_vars(index, variables)
    if not isinstance(base, Const) or not all(isinstance(c, int) for c in coeffs.values()):
        return None
    steps = [np.arange(lp.extent) * coeffs[lp.var] for lp in loops]
    total = np.array([base.value])
    for s in steps:
        total = (total[:, None] + s[None, :]).reshape(-1)
    return [int(e) for e in total]


__all__ = ["overwrite_first_step"]
