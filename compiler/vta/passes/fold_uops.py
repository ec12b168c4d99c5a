"""Micro-op kernel extraction and loop folding.

A compute block is a subtree whose statements are all GEMMs of one kind (update or
reset) or all ALU operations of one kind. Up to two of its perfectly nested loops, those
with the largest trip counts whose index factors are the same non-negative constants for
every statement, fold into the instruction's iter_out / iter_in; the remaining loops are
enumerated into micro-ops. Blocks with more micro-ops than a fraction of the uop buffer
peel their outermost loop into repeated instructions.
"""
from __future__ import annotations

import itertools

import numpy as np

from vtalab.spec import Config, Isa
from vtalab.spec.isa import LOOP_ITER_BITS

from ...errors import LoweringError
from ...ir.stmt import Allocate, Attr, For, Seq, seq
from ...ir.visit import walk
from ..nodes import Alu, Gemm, UopKernel, VtaStmt
from .common import coefficients, rewrite_top_down, without_vars

MAX_ITER = (1 << LOOP_ITER_BITS) - 1


def fold_uops(func, cfg: Config):
    limit = max(1, cfg.uop_depth // 8)

    def fn(node):
        key = _block_key(node)
        if key is not None:
            return _fold(node, cfg, limit)
        return None

    return func.with_body(rewrite_top_down(func.body, fn))


def _template(leaf):
    if isinstance(leaf, Gemm):
        return ("gemm", leaf.reset, leaf.overwrite)
    if isinstance(leaf, Alu):
        return ("alu", leaf.op, leaf.imm, leaf.src is None)
    return None


def _block_key(node):
    if not isinstance(node, (For, Gemm, Alu)):
        return None
    keys = set()
    for n in walk(node):
        if isinstance(n, VtaStmt):
            keys.add(_template(n))
        elif not isinstance(n, (For, Seq)) and not _is_expr(n):
            return None
    return keys.pop() if len(keys) == 1 and None not in keys else None


def _is_expr(n) -> bool:
    from ...ir.expr import Expr
    return isinstance(n, Expr)


def _fields(leaf):
    if isinstance(leaf, Gemm):
        return (leaf.acc_index, leaf.inp_index, leaf.wgt_index)
    return (leaf.dst_index, leaf.src_index, None)


def _leaves(node, loops=()):
    if isinstance(node, For):
        yield from _leaves(node.body, loops + (node,))
    elif isinstance(node, Seq):
        for s in node.stmts:
            yield from _leaves(s, loops)
    else:
        yield node, loops


def _fold(block, cfg: Config, limit: int):
    spine, node = [], block
    while isinstance(node, For):
        spine.append(node)
        node = node.body
    leaves = list(_leaves(block))
    total = sum(int(np.prod([lp.extent for lp in loops])) for _, loops in leaves)
    chosen = _choose(spine, leaves, cfg)
    folded = int(np.prod([lp.extent for lp in chosen])) if chosen else 1
    if total // folded > limit and spine and spine[0] not in chosen:
        top = spine[0]
        return For(top.var, top.extent, _fold(top.body, cfg, limit), "serial")
    if total // folded > limit and isinstance(block, Seq):
        return seq(*[_fold(s, cfg, limit) for s in block.stmts])
    if total // folded > cfg.uop_depth:
        raise LoweringError(f"micro-op kernel must fit the uop buffer ({cfg.uop_depth} "
                            f"entries, uop_depth), not {total // folded} micro-ops")
    return _kernel(leaves, chosen, spine)


def _factors(var, leaves):
    """(dst, src, wgt) coefficients of ``var``, identical for all leaves, else None."""
    found = None
    for leaf, loops in leaves:
        vs = [lp.var for lp in loops]
        coeffs = tuple(coefficients(e, vs)[var] if e is not None else 0 for e in _fields(leaf))
        if isinstance(leaf, Alu) and leaf.src is None:
            coeffs = (coeffs[0], 0, 0)
        if found is None:
            found = coeffs
        elif coeffs != found:
            return None
    return found


def _choose(spine, leaves, cfg: Config):
    isa = Isa(cfg)
    limits = (isa.gemm["dst_factor_out"].max_value, isa.gemm["src_factor_out"].max_value,
              isa.gemm["wgt_factor_out"].max_value)
    usable = []
    for lp in spine:
        f = _factors(lp.var, leaves)
        if f is not None and lp.extent <= MAX_ITER and all(0 <= c <= m for c, m in zip(f, limits)):
            usable.append(lp)
    best, best_n = [], 1
    for k in (1, 2):
        for combo in itertools.combinations(usable, k):
            n = int(np.prod([lp.extent for lp in combo]))
            if n > best_n:
                best, best_n = list(combo), n
    return sorted(best, key=spine.index)


def _kernel(leaves, chosen, spine):
    chosen_vars = [lp.var for lp in chosen]
    uops, rests = [], []
    for leaf_no, (leaf, loops) in enumerate(leaves):
        enum = [lp for lp in loops if lp not in chosen]
        vs = [lp.var for lp in enum]
        fields = _fields(leaf)
        coeff = [coefficients(e, vs) if e is not None else {} for e in fields]
        rests.append(tuple(without_vars(e, vs + chosen_vars) if e is not None else None
                           for e in fields))
        for point in itertools.product(*[range(lp.extent) for lp in enum]):
            uops.append((leaf_no,) + tuple(
                sum(c.get(v, 0) * p for v, p in zip(vs, point)) for c in coeff))
    iters = []
    for lp in chosen:
        iters.append((lp.extent,) + _factors(lp.var, leaves))
    while len(iters) < 2:
        iters.insert(0, (1, 0, 0, 0))
    kind = "gemm" if isinstance(leaves[0][0], Gemm) else "alu"
    return UopKernel(kind, leaves[0][0], tuple(uops), tuple(rests), tuple(iters))
