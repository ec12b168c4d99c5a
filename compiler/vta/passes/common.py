"""Helpers shared by the accelerator passes: perfect loop nests and entry indexing."""
from __future__ import annotations

from vtalab.spec import Config

from ...errors import LoweringError
from ...ir.arith import linear, simplify
from ...ir.expr import Const, Var
from ...ir.stmt import Attr, For, IfThen, Store
from ...ir.visit import walk
from ..intrin import entry_shape, flat_index


def perfect_nest(node):
    """(loops outer->inner, attrs, leaf) of a chain of For/Attr nodes, else None."""
    loops, attrs = [], []
    while True:
        if isinstance(node, For):
            loops.append(node)
            node = node.body
        elif isinstance(node, Attr):
            attrs.append(node)
            node = node.body
        else:
            return loops, attrs, node


def split_entry(cfg: Config, buffer, indices, loops, scope=None, what="access"):
    """(entry index expr, tail vars) of an access whose last two dims are one SRAM entry.

    The tail indices must be loop variables spanning the entry (or 0 for a size-1 dim).
    """
    tail_shape = entry_shape(cfg, scope or buffer.scope)
    if tuple(buffer.shape[-2:]) != tail_shape:
        raise LoweringError(f"{what} buffer {buffer.name} must end with the "
                            f"{scope or buffer.scope} entry shape {tail_shape}, not shape "
                            f"{buffer.shape}")
    extents = {lp.var: lp.extent for lp in loops}
    tail = []
    for idx, n in zip(indices[-2:], tail_shape):
        idx = simplify(idx)
        if isinstance(idx, Var) and extents.get(idx) == n:
            tail.append(idx)
        elif n == 1 and isinstance(idx, Const) and idx.value == 0:
            tail.append(None)
        elif n == 1 and isinstance(idx, Var) and extents.get(idx) == 1:
            tail.append(idx)
        else:
            raise LoweringError(f"{what} of {buffer.name} must index its last two dimensions "
                                f"with whole-entry loops of extents {tail_shape}, not "
                                f"{[repr(i) for i in indices[-2:]]}")
    entry = simplify(flat_index(list(indices[:-2]), buffer.shape[:-2]))
    return entry, tail


def coefficients(expr, variables) -> dict:
    """Affine coefficient of each loop variable in ``expr`` (error if not affine in them)."""
    lin = linear(expr)
    vs = set(variables)
    for atom in lin.terms:
        if not isinstance(atom, Var) and any(isinstance(n, Var) and n in vs for n in walk(atom)):
            raise LoweringError(f"index {expr!r} must be affine in the loop variables "
                                f"{[v.name for v in variables]}")
    return {v: lin.coeff(v) for v in variables}


def without_vars(expr, variables):
    """``expr`` with the given variables set to 0."""
    from ...ir.visit import substitute
    return simplify(substitute(expr, {v: Const(0, v.dtype) for v in variables}))


def reject_guards(leaf, what: str):
    if isinstance(leaf, IfThen):
        raise LoweringError(f"{what} must have tiles that divide the tensor (no partial "
                            f"tiles), not a guarded body `if {leaf.cond!r}`")


def is_store(node) -> bool:
    return isinstance(node, Store)


def rewrite_top_down(node, fn):
    """Replace the outermost nodes for which ``fn`` returns a statement; recurse elsewhere."""
    from ...ir.stmt import Allocate, Seq, seq
    new = fn(node)
    if new is not None:
        return new
    if isinstance(node, For):
        return For(node.var, node.extent, rewrite_top_down(node.body, fn), node.kind)
    if isinstance(node, Attr):
        return Attr(node.key, node.value, rewrite_top_down(node.body, fn))
    if isinstance(node, Seq):
        return seq(*[rewrite_top_down(s, fn) for s in node.stmts])
    if isinstance(node, Allocate):
        return Allocate(node.buffer, rewrite_top_down(node.body, fn), node.base)
    if isinstance(node, IfThen):
        return IfThen(node.cond, rewrite_top_down(node.then, fn),
                      None if node.orelse is None else rewrite_top_down(node.orelse, fn))
    return node
