"""Readable text of expressions and statements (what ``dump_after`` prints)."""
from __future__ import annotations

from .expr import Expr, Var, Const, Binary, Cmp, Not, Select, Cast, Call, Load

_SYM = {"add": "+", "sub": "-", "mul": "*", "div": "/", "floordiv": "//", "floormod": "%",
        "shl": "<<", "shr": ">>", "and": "&&", "or": "||",
        "lt": "<", "le": "<=", "gt": ">", "ge": ">=", "eq": "==", "ne": "!="}


def format_expr(e) -> str:
    f = format_expr
    if isinstance(e, Var):
        return e.name
    if isinstance(e, Const):
        return repr(e.value)
    if isinstance(e, (Binary, Cmp)):
        if e.op in ("min", "max"):
            return f"{e.op}({f(e.a)}, {f(e.b)})"
        return f"({f(e.a)} {_SYM[e.op]} {f(e.b)})"
    if isinstance(e, Not):
        return f"!{f(e.a)}"
    if isinstance(e, Select):
        return f"select({f(e.cond)}, {f(e.t)}, {f(e.f)})"
    if isinstance(e, Cast):
        return f"{e.dtype}({f(e.value)})"
    if isinstance(e, Call):
        return f"{e.name}({', '.join(f(a) for a in e.args)})"
    if isinstance(e, Load):
        return f"{e.buffer.name}[{', '.join(f(i) for i in e.indices)}]"
    if isinstance(e, Expr):
        return type(e).__name__
    return repr(e)


def format_ir(node, indent: int = 0) -> str:
    lines: list[str] = []
    _emit(node, indent, lines)
    return "\n".join(lines)


def _emit(node, depth: int, lines: list) -> None:
    from . import stmt as S
    pad = "  " * depth
    if isinstance(node, S.Seq):
        for s in node.stmts:
            _emit(s, depth, lines)
    elif isinstance(node, S.For):
        kind = "" if node.kind == "serial" else f" {node.kind}"
        lines.append(f"{pad}for {node.var.name} in 0..{node.extent}{kind}:")
        _emit(node.body, depth + 1, lines)
    elif isinstance(node, S.Allocate):
        b = node.buffer
        base = "" if node.base is None else f" @{node.base}"
        lines.append(f"{pad}alloc {b.name}: {b.dtype}{list(b.shape)} in {b.scope}{base}")
        _emit(node.body, depth, lines)
    elif isinstance(node, S.Attr):
        value = getattr(node.value, "name", node.value)
        lines.append(f"{pad}// attr {node.key} = {value}")
        _emit(node.body, depth, lines)
    elif isinstance(node, S.Store):
        idx = ", ".join(format_expr(i) for i in node.indices)
        lines.append(f"{pad}{node.buffer.name}[{idx}] = {format_expr(node.value)}")
    elif isinstance(node, S.IfThen):
        lines.append(f"{pad}if {format_expr(node.cond)}:")
        _emit(node.then, depth + 1, lines)
        if node.orelse is not None:
            lines.append(f"{pad}else:")
            _emit(node.orelse, depth + 1, lines)
    elif isinstance(node, S.Evaluate):
        lines.append(f"{pad}{format_expr(node.value)}")
    elif hasattr(node, "format"):
        lines.append(pad + node.format())
    else:
        lines.append(f"{pad}{node!r}")
