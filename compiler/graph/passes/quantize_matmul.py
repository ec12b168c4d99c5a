"""int8 groups anchored at a MatMul of two computed operands (attention's Q x K^T, attn x V).

    a [..., M, K], b [..., K, N] (float, computed)  [-> relu | clip]

becomes, with a and b quantised at their calibrated exponents ea, eb (power-of-two scales):

    x   = reshape(a_q, [G, M, K])                    G: the product of the leading axes
    w   = transpose(reshape(b_q, [G, K, N]), 0 2 1)  [G, N, K]: per batch index, a dense
                                                     layer's weights
    acc = batch_dense(x, w)                          int8 x int8 -> int32, exponent ea + eb
    acc = add(acc, 2**(shift-1)) ; shr(acc, shift)   round half up, shift = ea + eb - eo
    y   = reshape(cast(clip(acc, lo, hi), int8), [..., M, N])

the requantisation of conv2d / dense groups (quantize.py), so partition, fuse and the
accelerator lowering treat batch_dense like dense, its weights loaded from DRAM.
"""
from __future__ import annotations

import numpy as np

from ..ir import Graph, Node


def batchable(graph: Graph, anchor: Node) -> bool:
    """Both operands computed, of rank >= 2, with the same leading (batch) axes."""
    if len(anchor.inputs) != 2 or any(graph.is_constant(v) for v in anchor.inputs):
        return False
    a, b = (graph.types[v] for v in anchor.inputs)
    return a.rank >= 2 and b.rank == a.rank and a.shape[:-2] == b.shape[:-2] and \
        a.dtype == b.dtype == "float32"


def emit_matmul_group(q, group, clip_bounds) -> None:
    """Emit the int8 form of `group` (a quantize.Group anchored at a batchable matmul) with
    the quantiser `q`; `clip_bounds(nodes, exponent)` gives its activations' int8 bounds."""
    rw, anchor = q.rw, group.anchor
    a, b = (q.graph.types[v] for v in anchor.inputs)
    (xq, ea), (bq, eb) = q.as_int8(anchor.inputs[0]), q.as_int8(anchor.inputs[1])
    g, (m, k), n = int(np.prod(a.shape[:-2], dtype=np.int64)), a.shape[-2:], b.shape[-1]
    name = anchor.name
    x = rw.op("reshape", xq, name=f"{name}_x", shape=(g, m, k)) if a.rank != 3 else xq
    bt = rw.op("reshape", bq, name=f"{name}_b", shape=(g, k, n)) if b.rank != 3 else bq
    w = rw.op("transpose", bt, name=f"{name}_w", perm=(0, 2, 1))
    acc = rw.op("batch_dense", x, w, name=name)
    eo = q.exponent(group.out)
    shift = ea + eb - eo
    if shift > 0:
        rounding = rw.const(np.array(1 << (shift - 1), np.int32), f"{name}_round")
        acc = rw.op("add", acc, rounding, name=f"{name}_bias")
    if shift:
        acc = rw.op("shr", acc, name=f"{name}_shift", amount=int(shift))
    lo, hi = clip_bounds(group.activations, eo)
    acc = rw.op("clip", acc, name=f"{group.last.name}_clip", lo=lo, hi=hi)
    out = rw.op("cast", acc, name=f"{group.out}_q", dtype="int8")
    if a.rank != 3:
        out = rw.op("reshape", out, name=f"{group.out}_shape", shape=a.shape[:-2] + (m, n))
    q.set_int8(group.out, out, eo)
