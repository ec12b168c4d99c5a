"""Einsum (ONNX Einsum 12, 28): numpy's einsum over one or two operands (transposes,
diagonals, sums, inner / outer / batched matrix products), with ellipses and broadcasting."""
from __future__ import annotations

import numpy as np

from ..ir import TensorType
from ..opdef import OpDef, onnx_op, register
from ..shapes import fail, need, same_dtypes


def _terms(equation: str, ranks):
    """(input terms, output term) with '...' expanded to upper-case letters."""
    eq = equation.replace(" ", "")
    lhs, arrow, rhs = eq.partition("->")
    inputs = lhs.split(",")
    if len(inputs) != len(ranks):
        raise ValueError(f"{len(inputs)} operand terms for {len(ranks)} operands")
    most = 0
    expanded = []
    for term, rank in zip(inputs, ranks):
        if "..." in term:
            count = rank - (len(term) - 3)
            most = max(most, count)
            term = term.replace("...", "ABCDEFGHIJKLMNOPQRSTUVWXYZ"[26 - count:])
        if len(term) != rank:
            raise ValueError(f"term {term!r} for a rank-{rank} operand")
        expanded.append(term)
    ellipsis = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"[26 - most:] if most else ""
    if arrow:
        out = rhs.replace("...", ellipsis)
    else:
        letters = "".join(expanded)
        out = ellipsis + "".join(sorted(ch for ch in set(letters)
                                        if ch.islower() and letters.count(ch) == 1))
    return expanded, out


def infer_einsum(node, types):
    need(node, types, (1, 2))
    dtype = same_dtypes(node, types)
    try:
        inputs, out = _terms(node.attr("equation"), [t.rank for t in types])
    except ValueError as exc:
        raise fail(node, "equation", "valid for the operands", f"{node.attr('equation')!r}: "
                                                                f"{exc}") from None
    sizes: dict[str, int] = {}
    for term, t in zip(inputs, types):
        for ch, d in zip(term, t.shape):
            if sizes.get(ch, 1) not in (1, d) and d != 1:
                raise fail(node, f"size of index {ch!r}", str(sizes[ch]), d)
            sizes[ch] = max(sizes.get(ch, 1), d) if d != 1 or ch not in sizes else sizes[ch]
    return [TensorType(tuple(sizes[ch] for ch in out), dtype)]


def ref_einsum(node, *xs):
    if xs[0].dtype.kind == "V":   # low-precision floats: compute in float32
        return np.einsum(node.attr("equation"), *[x.astype(np.float32) for x in xs]
                         ).astype(xs[0].dtype)
    return np.asarray(np.einsum(node.attr("equation"), *xs, optimize=len(xs) > 1)
                      ).astype(xs[0].dtype)


def macs_einsum(node, types, out):
    """One multiply-accumulate per point of the space of all indices (two operands)."""
    if len(types) < 2:
        return 0
    inputs, _ = _terms(node.attr("equation"), [t.rank for t in types])
    sizes = {ch: d for term, t in zip(inputs, types) for ch, d in zip(term, t.shape)}
    return int(np.prod(list(sizes.values()), dtype=np.int64))


register(OpDef("einsum", infer_einsum, reference=ref_einsum, macs=macs_einsum,
               doc="np.einsum(equation, *operands), one or two operands"))


@onnx_op("Einsum", versions=(12, 28))
def _einsum(c):
    inputs = [v for v in c.inputs() if v]
    if len(inputs) > 2:
        raise c.fail("operand count", "1 or 2", len(inputs))
    c.emit("einsum", inputs, equation=c.attr("equation"))
