"""Max pooling as separable loop IR: per output row, a vertical then a horizontal max.

For output row ``oh`` of a plane: ``vrow[w] = max over the window's rows of x[row, w]``
(contiguous vectors over the whole input row, the row index clamped into the input: a
clamped row is still inside the window whenever the window overlaps the input), with
``-inf`` in the padding columns; then ``out[oh, ow] = max over kw of vrow[ow * sw + kw]``
(strided vector loads). Planes (or, by the ``parallel`` knob, rows) run in parallel. A
window lying wholly in the padding, a dilation or a stride above ``MAX_STRIDE`` takes the
te path in ``pool.py`` instead.
"""
from __future__ import annotations

from ..ir.expr import const, max_expr, min_expr
from ..ir.func import PrimFunc
from ..ir.stmt import Buffer, seq
from ..llvm.exprgen import MAX_STRIDE
from .conv import out_size
from .loops import local, loop, row_loop, store


def windows_overlap(size: int, k: int, stride: int, before: int, after: int) -> bool:
    """Whether every window along an axis overlaps the unpadded input."""
    n = out_size(size, k, stride, 1, before, after)
    return before < k and (n - 1) * stride - before < size


def separable(kind, shape, kernel, stride, pads, dilation) -> bool:
    """Whether ``max_pool_func`` computes this pooling exactly."""
    (KH, KW), (sh, sw) = kernel, stride
    return (kind == "max" and dilation == (1, 1) and sw <= MAX_STRIDE
            and windows_overlap(shape[2], KH, sh, pads[0], pads[2])
            and windows_overlap(shape[3], KW, sw, pads[1], pads[3]))


def max_pool_func(shape, dtype, kernel, stride, pads, lanes: int,
                  parallel: str = "plane") -> PrimFunc:
    """``parallel``: "plane" runs the planes in parallel, each over its rows; "row" runs
    every (plane, output row) pair in parallel."""
    N, C, H, W = shape
    (KH, KW), (sh, sw), (pt, pl, pb, pr) = kernel, stride, pads
    OH, OW = out_size(H, KH, sh, 1, pt, pb), out_size(W, KW, sw, 1, pl, pr)
    span = (OW - 1) * sw + KW                     # padded columns the windows read
    x = Buffer("x", shape, dtype)
    out = Buffer("max_pool2d", (N, C, OH, OW), dtype)
    low = const(x.dtype.min_value, dtype)

    def output_row(n, c, oh, vrow):
        rows = [max_expr(min_expr(oh * sh + (kh - pt), H - 1), 0) for kh in range(KH)]

        def vertical(w):
            v = x.load(n, c, rows[0], w)
            for r in rows[1:]:
                v = max_expr(v, x.load(n, c, r, w))
            return store(vrow, (pl + w,), v)

        def horizontal(ow):
            v = vrow.load(ow * sw)
            for kw in range(1, KW):
                v = max_expr(v, vrow.load(ow * sw + kw))
            return store(out, (n, c, oh, ow), v)
        padding = [store(vrow, (p,), low) for p in (*range(pl), *range(pl + W, span))]
        return seq(*padding, row_loop(W, lanes, vertical),
                   row_loop(OW, lanes, horizontal, split_tail=True))

    def plane(p):
        n, c = p // C, p % C
        return local("vrow", (max(span, pl + W),), dtype, lambda vrow: loop(
            "oh", OH, lambda oh: output_row(n, c, oh, vrow)))

    def row(p):
        n, c = p // (C * OH), p // OH % C
        return local("vrow", (max(span, pl + W),), dtype,
                     lambda vrow: output_row(n, c, p % OH, vrow))
    if parallel == "row":
        body = loop("row", N * C * OH, row, "parallel" if N * C * OH > 1 else "serial")
    else:
        body = loop("plane", N * C, plane, "parallel" if N * C > 1 else "serial")
    return PrimFunc("max_pool2d", (x, out), body, (out,))
