"""SRAM allocation: each inp/wgt/acc buffer gets an entry range; indices become absolute.

Buffers live for their Allocate's body; nested ones stack. A tile that does not fit is a
SramCapacityError naming the buffer, its entries, what is already allocated and the depth.
"""
from __future__ import annotations

from vtalab.spec import Config

from ...errors import SramCapacityError
from ...ir.arith import simplify
from ...ir.stmt import Allocate, Attr, For, IfThen, Seq, SRAM_SCOPES, seq
from ..intrin import entries
from ..nodes import VtaStmt


def allocate_sram(func, cfg: Config):
    state = {scope: [] for scope in SRAM_SCOPES}
    return func.with_body(_visit(func.body, cfg, state, {}))


def _visit(node, cfg, state, bases):
    if isinstance(node, Allocate) and node.buffer.scope in SRAM_SCOPES:
        b = node.buffer
        stack = state[b.scope]
        used = sum(size for _, size in stack)
        size = entries(b, cfg)
        depth = cfg.depth(b.scope)
        if used + size > depth:
            live = ", ".join(f"{name} ({s})" for name, s in stack) or "nothing"
            raise SramCapacityError(
                f"{b.scope} buffer must hold {b.name}: {size} entries of shape "
                f"{tuple(b.shape[-2:])} ({'x'.join(map(str, b.shape[:-2]))}) on top of {used} "
                f"entries in use by {live}, but {b.scope}_depth is {depth}; use smaller tiles "
                f"or fewer virtual threads")
        stack.append((b.name, size))
        body = _visit(node.body, cfg, state, {**bases, b: used})
        stack.pop()
        return Allocate(b, body, used)
    if isinstance(node, VtaStmt):
        return node.map_sram(lambda buf, idx: (buf, simplify(idx + bases[buf])))
    if isinstance(node, For):
        return For(node.var, node.extent, _visit(node.body, cfg, state, bases), node.kind)
    if isinstance(node, Seq):
        return seq(*[_visit(s, cfg, state, bases) for s in node.stmts])
    if isinstance(node, Allocate):
        return Allocate(node.buffer, _visit(node.body, cfg, state, bases), node.base)
    if isinstance(node, Attr):
        return Attr(node.key, node.value, _visit(node.body, cfg, state, bases))
    if isinstance(node, IfThen):
        return IfThen(node.cond, _visit(node.then, cfg, state, bases))
    return node
