"""GEMM micro-op loops, vectorised per instruction.

Products of one instruction are order-independent (the accumulator wraps modulo 2**acc_bits),
so they are summed in float64 exactly — the products are exact small integers — and
added to the accumulator once, wrapping. The micro-ops are grouped by their weight (or
input) entry so that each group is one BLAS matrix product.
"""
from __future__ import annotations

import numpy as np

from vtalab.spec import Config

MIN_GROUP = 12          # below this average group size, stacked products beat grouping


def exact_in_float64(cfg: Config, count: int) -> bool:
    """Whether ``count`` products summed in float64 cannot lose a bit."""
    worst = cfg.block_in * (1 << (cfg.inp_bits - 1)) * (1 << (cfg.wgt_bits - 1))
    return worst * max(count, 1) < 1 << 53


def accumulate_products(cfg: Config, inp: np.ndarray, wgt: np.ndarray, dst: np.ndarray,
                        src: np.ndarray, widx: np.ndarray):
    """Return (rows, sums): the sorted distinct dst rows and the products summed per row."""
    rows, slot = _compact(dst, cfg.acc_depth)
    if not exact_in_float64(cfg, len(dst)):
        prods = np.einsum("nbi,noi->nbo", inp[src].astype(np.int64), wgt[widx].astype(np.int64))
        sums = np.zeros((len(rows),) + prods.shape[1:], dtype=np.int64)
        np.add.at(sums, slot, prods)
        return rows, sums
    sums = np.zeros((len(rows), cfg.batch, cfg.block_out), dtype=np.float64)
    by_wgt = _distinct(widx, cfg.wgt_depth) <= _distinct(src, cfg.inp_depth)
    keys, key_range = (widx, cfg.wgt_depth) if by_wgt else (src, cfg.inp_depth)
    order = np.argsort(keys, kind="stable")
    sorted_keys = keys[order]
    starts = np.flatnonzero(np.r_[True, sorted_keys[1:] != sorted_keys[:-1]])
    if len(dst) < MIN_GROUP * len(starts):
        _add_stacked(sums, slot, inp, wgt, src, widx)
        return rows, sums
    ends = np.r_[starts[1:], len(keys)]
    unique_pairs = _distinct(slot * key_range + keys, len(rows) * key_range) == len(keys)
    for first, last in zip(starts.tolist(), ends.tolist()):
        members = order[first:last]
        if by_wgt:
            prods = _products_one_wgt(inp, wgt, src[members], widx[members[0]])
        else:
            prods = _products_one_inp(inp, wgt, src[members[0]], widx[members])
        if unique_pairs:
            sums[slot[members]] += prods
        else:
            np.add.at(sums, slot[members], prods)
    return rows, sums


_MASK_LIMIT = 1 << 24


def _distinct(values: np.ndarray, bound: int) -> int:
    """Number of distinct values in [0, bound)."""
    if bound > _MASK_LIMIT:
        return len(np.unique(values))
    seen = np.zeros(bound, dtype=bool)
    seen[values] = True
    return int(np.count_nonzero(seen))


def _compact(values: np.ndarray, bound: int) -> tuple[np.ndarray, np.ndarray]:
    """(sorted distinct values, position of each value among them) for values in [0, bound)."""
    seen = np.zeros(bound, dtype=bool)
    seen[values] = True
    rows = np.flatnonzero(seen)
    slot_of = np.zeros(bound, dtype=np.int64)
    slot_of[rows] = np.arange(len(rows))
    return rows, slot_of[values]


def _products_one_wgt(inp, wgt, src, w):
    a = inp[src]                                   # (n, batch, block_in)
    n, batch, block_in = a.shape
    return (a.reshape(n * batch, block_in) @ wgt[w].T).reshape(n, batch, -1)


def _products_one_inp(inp, wgt, s, widx):
    w = wgt[widx]                                  # (n, block_out, block_in)
    n, block_out, block_in = w.shape
    prods = w.reshape(n * block_out, block_in) @ inp[s].T        # (n*block_out, batch)
    return prods.reshape(n, block_out, -1).transpose(0, 2, 1)


def _add_stacked(sums, slot, inp, wgt, src, widx, chunk=1 << 16):
    for first in range(0, len(src), chunk):
        part = slice(first, first + chunk)
        prods = np.matmul(inp[src[part]], wgt[widx[part]].transpose(0, 2, 1))
        np.add.at(sums, slot[part], prods)


def structured_products(cfg: Config, inp: np.ndarray, wgt: np.ndarray, base, insn):
    """(rows, sums) as one matrix product per dst base, or None for loops it cannot map.

    Each loop is classified as an M loop (moves dst and src, not wgt), an N loop (moves dst
    and wgt, not src) or a K loop (leaves dst alone: a reduction). The micro-ops sharing a
    dst base then form C[M, N] += A[M, K x uops] @ W[K x uops, N]: a blocked matmul or a
    convolution becomes a few BLAS calls per instruction instead of one per weight entry.
    """
    d, s, w = base
    roles = {"m": [], "n": [], "k": []}
    for extent, fd, fs, fw in ((insn.iter_out, insn.dst_factor_out, insn.src_factor_out,
                                insn.wgt_factor_out),
                               (insn.iter_in, insn.dst_factor_in, insn.src_factor_in,
                                insn.wgt_factor_in)):
        role = "k" if fd == 0 else "m" if fw == 0 else "n" if fs == 0 else None
        if role is None:
            return None
        roles[role].append((extent, {"d": fd, "s": fs, "w": fw}))
    iterations = len(d) * insn.iter_out * insn.iter_in
    grid = (_offsets(roles["m"], "d")[:, None] + _offsets(roles["n"], "d")[None, :]).reshape(-1)
    if iterations < 64 or not exact_in_float64(cfg, iterations) \
            or _distinct(grid, int(grid.max()) + 1) != len(grid):
        return None
    rows_all = (d[:, None] + grid[None, :]).reshape(-1)
    if rows_all.max() >= cfg.acc_depth:
        return None                        # let the general path raise the bounds error
    rows, slot = _compact(rows_all, cfg.acc_depth)
    slot = slot.reshape(len(d), -1)
    sums = np.zeros((len(rows), cfg.batch, cfg.block_out), dtype=np.float64)
    m_src, k_src = _offsets(roles["m"], "s"), _offsets(roles["k"], "s")
    k_wgt, n_wgt = _offsets(roles["k"], "w"), _offsets(roles["n"], "w")
    for dst_base in np.unique(d).tolist():
        members = np.flatnonzero(d == dst_base)
        src_idx = m_src[:, None, None] + k_src[None, :, None] + s[members][None, None, :]
        a = inp[src_idx]                                   # (M, K, U, batch, block_in)
        a = np.ascontiguousarray(a.transpose(0, 3, 1, 2, 4)).reshape(len(m_src) * cfg.batch, -1)
        wgt_idx = k_wgt[:, None, None] + w[members][None, :, None] + n_wgt[None, None, :]
        b = wgt[wgt_idx]                                   # (K, U, N, block_out, block_in)
        b = np.ascontiguousarray(b.transpose(0, 1, 4, 2, 3)).reshape(-1, len(n_wgt) * cfg.block_out)
        prod = (a @ b).reshape(len(m_src), cfg.batch, len(n_wgt), cfg.block_out)
        sums[slot[members[0]]] += prod.transpose(0, 2, 1, 3).reshape(-1, cfg.batch, cfg.block_out)
    return rows, sums


def _offsets(loops, which: str) -> np.ndarray:
    """Index offsets of every point of a loop nest (C order) along one operand."""
    offsets = np.zeros(1, dtype=np.int64)
    for extent, factors in loops:
        offsets = (offsets[:, None] + np.arange(extent) * factors[which]).reshape(-1)
    return offsets
