"""Loop IR written directly, for kernels a te compute cannot express (one loop that
stores two tensors, a reduction folded into its producer's loop).

    body = loop("i", 8, lambda i: store(y, (i,), x.load(i) * 2.0), "vectorize")

Every builder returns generic loop IR (``ir.stmt``), compiled by the same LLVM path as
te-lowered functions (``common.compiled_func`` memoises and builds them).
"""
from __future__ import annotations

from ..ir.expr import Binary, Const, INT32, Var, as_expr, const, select
from ..ir.stmt import Allocate, Buffer, For, IfThen, Store, seq

COMBINE = {"max": "max", "sum": "add"}
MAX_CHAINS = 4


def loop(name: str, extent: int, body, kind: str = "serial"):
    """``For`` over a fresh variable; ``body(var)`` builds the loop body."""
    var = Var(name, INT32)
    return For(var, extent, body(var), kind if extent > 1 or kind != "vectorize" else "serial")


def store(buf: Buffer, indices, value) -> Store:
    """``buf[indices] = value`` (ints become constants)."""
    return Store(buf, tuple(as_expr(i) for i in indices), as_expr(value, buf.dtype))


def identity(kind: str, dtype) -> Const:
    return const(dtype.min_value if kind == "max" else 0, dtype)


def combine(kind: str, a, b):
    return Binary(COMBINE[kind], a, b)


def local(name: str, shape, dtype, body) -> Allocate:
    """A scratch buffer (registers once LLVM promotes it) around ``body(buffer)``."""
    buf = Buffer(name, tuple(shape), dtype, "local")
    return Allocate(buf, body(buf))


def row_layout(length: int, lanes: int) -> tuple[int, int]:
    """(lanes, chains) for reducing a row of ``length`` with full vectors of ``lanes``:
    up to MAX_CHAINS independent accumulators, fewer for a short row."""
    return lanes, max(1, min(MAX_CHAINS, length // lanes))


def vector_accumulate(acc: Buffer, kind: str, length: int, term):
    """acc[chains, lanes] <- identity; then ``acc[u, j] (op)= value`` for every position
    ``pos`` of a row of ``length``, where ``term(pos)`` is (value, statements to run first
    at pos). Whole groups of ``chains`` vectors run unmasked; the rest of the row runs
    after them on chain 0, the last vector masked if the row ends inside it."""
    chains, lanes = acc.shape
    width = chains * lanes
    ident = identity(kind, acc.dtype)
    init = loop("u", chains, lambda u: loop(
        "j", lanes, lambda j: store(acc, (u, j), ident), "vectorize"), "unroll")

    def update(pos, u, j, masked):
        value, before = term(pos)
        if masked:
            value = select(pos < length, value, ident)
            before = [IfThen(pos < length, s) for s in before]
        return seq(*before, store(acc, (u, j), combine(kind, acc.load(u, j), value)))
    groups = length // width
    main = loop("i", groups, lambda i: loop("u", chains, lambda u: loop(
        "j", lanes, lambda j: update((i * chains + u) * lanes + j, u, j, False),
        "vectorize"), "unroll")) if groups else None
    start = groups * width
    whole, part = divmod(length - start, lanes)
    tail = [loop("j", lanes, lambda j, t=t: update(start + t * lanes + j, 0, j, False),
                 "vectorize") for t in range(whole)]
    if part:
        last = start + whole * lanes
        tail.append(loop("j", lanes, lambda j: update(last + j, 0, j, True), "vectorize"))
    return seq(init, main, *tail)


def fold_lanes(acc: Buffer, kind: str, result: Buffer):
    """result[0] <- the ``kind`` reduction of acc[chains, lanes]: chains lane-wise first."""
    chains, lanes = acc.shape
    fold = [loop("j", lanes, lambda j, u=u: store(
        acc, (0, j), combine(kind, acc.load(0, j), acc.load(u, j))), "vectorize")
        for u in range(1, chains)]
    total = [store(result, (0,), identity(kind, acc.dtype)),
             loop("j", lanes, lambda j: store(
                 result, (0,), combine(kind, result.load(0), acc.load(0, j))))]
    return seq(*fold, *total)


def row_loop(length: int, lanes: int, body, split_tail: bool = False):
    """``body(pos)`` for pos in 0..length, vectorised by ``lanes``. If ``lanes`` does not
    divide the row, the rest runs after the main loop as one masked vector, or with
    ``split_tail`` as unmasked vectors of decreasing powers of two (for bodies whose
    masked form is slow, such as strided loads)."""
    whole = length // lanes
    main = loop("o", whole, lambda o: loop(
        "j", lanes, lambda j: body(o * lanes + j), "vectorize")) if whole else None
    start, rest = whole * lanes, length - whole * lanes
    if not rest:
        return main
    if not split_tail:
        return seq(main, loop("j", lanes, lambda j: IfThen(
            start + j < length, body(start + j)), "vectorize"))
    tail, width = [], lanes // 2
    while rest:
        if rest >= width:
            tail.append(loop("j", width, lambda j, s=start: body(s + j), "vectorize"))
            start, rest = start + width, rest - width
        width //= 2
    return seq(main, *tail)
