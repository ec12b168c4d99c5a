"""Reference executor of generic loop IR: compiles a PrimFunc to Python and runs it on numpy.

Slow but exact (integers wrap at stores and casts); the oracle for schedule tests.
"""
from __future__ import annotations

import numpy as np

from ..errors import CompileError
from .func import PrimFunc
from .pysource import Namer, base_globals, expr_source
from .stmt import Allocate, Attr, Evaluate, For, IfThen, Seq, Store


def run(func: PrimFunc, *arrays: np.ndarray) -> None:
    """Execute ``func`` in place on arrays given in parameter order."""
    if len(arrays) != len(func.params):
        raise CompileError(f"{func.name} must get {len(func.params)} arrays, not {len(arrays)}")
    names = Namer()
    lines = ["def _kernel(" + ", ".join(names.buffer(b) for b in func.params) + "):"]
    _emit(func.body, 1, lines, names)
    g = base_globals()
    g["np"] = np
    exec("\n".join(lines) + "\n    return None\n", g)
    for b, a in zip(func.params, arrays):
        if tuple(a.shape) != b.shape:
            raise CompileError(f"array for {b.name} must have shape {b.shape}, not {a.shape}")
    g["_kernel"](*arrays)


def _emit(node, depth, lines, names) -> None:
    pad = "    " * depth
    if isinstance(node, Seq):
        for s in node.stmts:
            _emit(s, depth, lines, names)
    elif isinstance(node, For):
        lines.append(f"{pad}for {names.var(node.var)} in range({node.extent}):")
        _emit(node.body, depth + 1, lines, names)
    elif isinstance(node, Allocate):
        b = node.buffer
        lines.append(f"{pad}{names.buffer(b)} = np.zeros({b.shape}, dtype='{b.dtype.numpy}')")
        _emit(node.body, depth, lines, names)
    elif isinstance(node, Attr):
        _emit(node.body, depth, lines, names)
    elif isinstance(node, Store):
        idx = ", ".join(expr_source(i, names) for i in node.indices)
        value = expr_source(node.value, names)
        lines.append(f"{pad}{names.buffer(node.buffer)}[{idx}] = _wrap_{node.buffer.dtype}({value})")
    elif isinstance(node, IfThen):
        lines.append(f"{pad}if {expr_source(node.cond, names)}:")
        _emit(node.then, depth + 1, lines, names)
        if node.orelse is not None:
            lines.append(f"{pad}else:")
            _emit(node.orelse, depth + 1, lines, names)
    elif isinstance(node, Evaluate):
        lines.append(f"{pad}{expr_source(node.value, names)}")
    else:
        raise CompileError(f"interp statement must be generic loop IR, not {type(node).__name__}")
    if lines[-1].endswith(":"):
        lines.append(pad + "    pass")
