"""Softmax over the last axis in three passes per row, rows in parallel.

Per row: (1) the max, with ``chains`` independent vector accumulators; (2) ``out =
exp(x - max)`` and, in the same loop, the running vector sums of ``out``; (3) ``out *=
1 / sum`` while the row is still in L1. exp is the vectorised polynomial of
``llvm/intrinsics.py`` (measured <= 1.9e-7 relative error). A te compute cannot store
``out`` and accumulate its sum in one loop, so the kernel is written as loop IR
(``loops.py``).
"""
from __future__ import annotations

import numpy as np

from ..ir.expr import call, const
from ..ir.func import PrimFunc
from ..ir.stmt import Buffer, seq
from .common import as_array, compiled_func
from .knobs import check_positive, knob_key, resolve, softmax_knobs
from .loops import fold_lanes, local, loop, row_loop, store, vector_accumulate


def softmax_row(x: Buffer, out: Buffer, m, lanes: int, chains: int):
    """The loop IR of softmax over row ``m`` of x into out."""
    n = x.shape[1]

    def passes(acc, red):
        row_max = seq(vector_accumulate(acc, "max", n, lambda p: (x.load(m, p), [])),
                      fold_lanes(acc, "max", red))

        def exp_term(p):
            e = store(out, (m, p), call("exp", x.load(m, p) - red.load(0)))
            return out.load(m, p), [e]
        row_sum = seq(vector_accumulate(acc, "sum", n, exp_term), fold_lanes(acc, "sum", red),
                      store(red, (0,), const(1.0, "float32") / red.load(0)))
        scale = row_loop(n, lanes, lambda p: store(out, (m, p), out.load(m, p) * red.load(0)))
        return seq(row_max, row_sum, scale)
    return local("acc", (chains, lanes), "float32", lambda acc: local(
        "red", (1,), "float32", lambda red: passes(acc, red)))


def softmax_func(M: int, N: int, lanes: int, chains: int, parallel: bool = True) -> PrimFunc:
    x = Buffer("x", (M, N), "float32")
    out = Buffer("softmax", (M, N), "float32")
    body = loop("m", M, lambda m: softmax_row(x, out, m, lanes, chains),
                "parallel" if M > 1 and parallel else "serial")
    return PrimFunc("softmax", (x, out), body, (out,))


def softmax_knob_func(M: int, N: int, target=None, knobs=None) -> PrimFunc:
    """The PrimFunc (x, out) of softmax over [M, N] rows with resolved ``knobs``
    (``knobs.softmax_knobs``: lanes, chains of vector accumulators, parallel rows)."""
    kn = resolve(softmax_knobs(N, target), knobs, "softmax")
    return softmax_func(M, N, check_positive("softmax lanes", kn["lanes"]),
                        check_positive("softmax chains", kn["chains"]), bool(kn["parallel"]))


def softmax_kernel(M, N, target=None, knobs=None):
    """The compiled kernel of softmax over the rows of a float32 [M, N] array."""
    kn = resolve(softmax_knobs(N, target), knobs, "softmax")
    return compiled_func(("softmax", M, N, knob_key(kn)),
                         lambda: softmax_knob_func(M, N, target, kn), target)


def softmax(x, axis=-1, target=None, knobs=None) -> np.ndarray:
    """Softmax of a float32 tensor along ``axis``."""
    x = as_array(x, np.float32, "x")
    moved = np.moveaxis(x, axis, -1)
    flat = np.ascontiguousarray(moved).reshape(-1, moved.shape[-1])
    k = softmax_kernel(flat.shape[0], flat.shape[1], target, knobs)
    out = np.empty_like(flat)
    k(flat, out)
    return np.moveaxis(out.reshape(moved.shape), -1, axis)
