"""Generic traversal of expression and statement trees (dataclass fields)."""
from __future__ import annotations

import dataclasses
from functools import lru_cache
from typing import Callable

from .expr import Expr, Var, Load
from .stmt import Stmt, For, Store


_NODE = (Expr, Stmt)


def _is_node(value) -> bool:
    return isinstance(value, _NODE)


@lru_cache(maxsize=None)
def _child_fields(cls) -> tuple[str, ...]:
    return tuple(f.name for f in dataclasses.fields(cls)
                 if f.name not in ("dtype", "uid", "name", "op", "kind", "key", "template"))


def children(node) -> list:
    """The direct child nodes of ``node`` (fields, and node items of tuple fields), in order."""
    kids = []
    for name in _child_fields(type(node)):
        value = getattr(node, name)
        if isinstance(value, _NODE):
            kids.append(value)
        elif isinstance(value, tuple):
            kids.extend(item for item in value if isinstance(item, _NODE))
    return kids


def walk(node):
    """Pre-order iterator over ``node`` and every node below it."""
    stack = [node]
    while stack:
        cur = stack.pop()
        yield cur
        stack.extend(reversed(children(cur)))


def rebuild(node, fn: Callable):
    """Post-order rewrite: children rebuilt first, then ``fn(new_node)`` (None keeps it)."""
    if not _is_node(node):
        return node
    changes = {}
    for name in _child_fields(type(node)):
        value = getattr(node, name)
        if _is_node(value):
            new = rebuild(value, fn)
            if new is not value:
                changes[name] = new
        elif isinstance(value, tuple) and any(_is_node(v) for v in value):
            new = tuple(rebuild(v, fn) for v in value)
            if any(a is not b for a, b in zip(new, value)):
                changes[name] = new
    if changes:
        node = dataclasses.replace(node, **changes)
    result = fn(node)
    return node if result is None else result


def substitute(node, mapping: dict):
    """Replace Vars by expressions (``mapping``: Var -> Expr)."""
    if not mapping:
        return node
    return rebuild(node, lambda n: mapping.get(n) if isinstance(n, Var) else None)


def free_vars(node) -> set:
    return {n for n in walk(node) if isinstance(n, Var)}


def uses_var(node, var: Var) -> bool:
    return any(isinstance(n, Var) and n == var for n in walk(node))


def buffers_read(node) -> set:
    return {n.buffer for n in walk(node) if isinstance(n, Load)}


def buffers_written(node) -> set:
    return {n.buffer for n in walk(node) if isinstance(n, Store)}


def loop_vars(node) -> list:
    return [n.var for n in walk(node) if isinstance(n, For)]
