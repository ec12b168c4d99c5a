"""GEMM micro-op loops, planned once per (instruction, micro-ops) and run with BLAS.

Products of one instruction are order-independent (the accumulator wraps modulo
2**acc_bits), so they are summed in floating point exactly: every product and every partial
sum is an integer no larger than (number of products) x (largest product), which float32
holds exactly up to 2**24 and float64 up to 2**53. Each plan picks the narrowest type in
which its longest sum is exact, and hands back int64 sums per accumulator row.

A plan holds index arrays only (no SRAM data), so one plan serves every run of the same
instruction with the same micro-ops. The float operand copies it reads are kept by the
compute unit: ``inp_f`` is (inp_depth + 1, batch, block_in) and ``wgt_t`` is
(wgt_depth + 1, block_in, block_out), each row transposed; the extra last row is zero and
pads ragged micro-op groups.
"""
from __future__ import annotations

import numpy as np

from vtalab.spec import Config

from .alu import as_slice

MIN_GROUP = 12          # below this average group size, stacked products beat grouping


def product_bound(cfg: Config) -> int:
    """The largest magnitude of one int product inp x wgt."""
    return (1 << (cfg.inp_bits - 1)) * (1 << (cfg.wgt_bits - 1))


def exact_float(cfg: Config, count: int):
    """The narrowest float dtype in which sums of ``count`` products are exact, or None."""
    worst = product_bound(cfg) * max(count, 1)
    if worst <= 1 << 24:
        return np.dtype(np.float32)
    if worst <= 1 << 53:
        return np.dtype(np.float64)
    return None


def exact_in_float64(cfg: Config, count: int) -> bool:
    """Whether ``count`` products summed in float64 cannot lose a bit."""
    return exact_float(cfg, count) is not None


class StructuredPlan:
    """C[M, N] += A[M, K x U] @ W[K x U, N] for every dst base, as one batched matmul.

    Each loop is classified as an M loop (moves dst and src, not wgt), an N loop (moves dst
    and wgt, not src) or a K loop (leaves dst alone: a reduction). The U micro-ops sharing a
    dst base form the rest of the reduction; groups with fewer micro-ops are padded with the
    zero row. A blocked matmul or a convolution becomes one BLAS call per (dst base, N).
    """

    def __init__(self, cfg: Config, src_idx, wgt_idx, rows, dtype):
        self.cfg, self.src_idx, self.wgt_idx, self.dtype = cfg, src_idx, wgt_idx, dtype
        flat = rows.reshape(-1)
        if len(np.unique(flat)) == len(flat):
            self.rows, self.slot = as_slice(flat), None
        else:
            self.rows, self.slot = _compact(flat, cfg.acc_depth)

    def products(self, inp_f: np.ndarray, wgt_t: np.ndarray):
        """(rows, integer sums of shape (rows, batch, block_out)); rows are distinct.

        Rows are a slice or an index array; the sums are int32 from float32 products
        (exact below 2**24), int64 otherwise."""
        cfg = self.cfg
        d, m, k, u = self.src_idx.shape
        # take() on 2-D row views: several times faster than fancy indexing
        a = inp_f.reshape(len(inp_f), -1).take(self.src_idx, axis=0)
        if cfg.batch > 1:                                  # (D, M, K, U, batch, block_in)
            a = a.reshape(a.shape[:4] + (cfg.batch, -1)).transpose(0, 1, 4, 2, 3, 5)
        a = a.reshape(d, 1, m * cfg.batch, -1).astype(self.dtype, copy=False)
        b = wgt_t.reshape(len(wgt_t), -1).take(self.wgt_idx, axis=0)   # (D, N, K, U, bi x bo)
        b = b.reshape(d, b.shape[1], -1, cfg.block_out).astype(self.dtype, copy=False)
        prod = np.matmul(a, b)                             # (D, N, M x batch, block_out)
        prod = prod.astype(np.int32 if self.dtype == np.float32 else np.int64)
        prod = prod.reshape(-1, cfg.batch, cfg.block_out)  # rows in (D, N, M) order
        if self.slot is None:
            return self.rows, prod
        sums = np.zeros((len(self.rows), cfg.batch, cfg.block_out), dtype=np.int64)
        np.add.at(sums, self.slot, prod.astype(np.int64))
        return self.rows, sums


def plan_structured(cfg: Config, base, insn, pad_inp: int, pad_wgt: int):
    """A StructuredPlan for this loop nest, or None when it does not map onto one."""
    d, s, w = base
    roles = _roles(insn)
    if roles is None:
        return None
    m_dst, n_dst = _offsets(roles["m"], "d"), _offsets(roles["n"], "d")
    grid = (m_dst[:, None] + n_dst[None, :]).reshape(-1)
    if len(d) * insn.iter_out * insn.iter_in < 64 \
            or _distinct(grid, int(grid.max()) + 1) != len(grid):
        return None
    bases, group = np.unique(d, return_inverse=True)
    counts = np.bincount(group)
    order = np.argsort(group, kind="stable")
    position = np.arange(len(d)) - np.r_[0, np.cumsum(counts)[:-1]][group[order]]
    valid = np.zeros((len(bases), counts.max()), dtype=bool)
    valid[group[order], position] = True
    s_u, w_u = np.zeros(valid.shape, np.int64), np.zeros(valid.shape, np.int64)
    s_u[group[order], position], w_u[group[order], position] = s[order], w[order]
    m_src, k_src = _offsets(roles["m"], "s"), _offsets(roles["k"], "s")
    k_wgt, n_wgt = _offsets(roles["k"], "w"), _offsets(roles["n"], "w")
    keep = valid[:, None, None, :]
    src_idx = np.where(keep, m_src[None, :, None, None] + k_src[None, None, :, None]
                       + s_u[:, None, None, :], pad_inp)
    wgt_idx = np.where(keep, n_wgt[None, :, None, None] + k_wgt[None, None, :, None]
                       + w_u[:, None, None, :], pad_wgt)
    dtype = exact_float(cfg, len(k_src) * valid.shape[1] * cfg.block_in)
    if dtype is None:
        return None
    rows = bases[:, None, None] + n_dst[None, :, None] + m_dst[None, None, :]
    return StructuredPlan(cfg, src_idx, wgt_idx, rows, dtype)


def _roles(insn):
    roles = {"m": [], "n": [], "k": []}
    for extent, fd, fs, fw in ((insn.iter_out, insn.dst_factor_out, insn.src_factor_out,
                                insn.wgt_factor_out),
                               (insn.iter_in, insn.dst_factor_in, insn.src_factor_in,
                                insn.wgt_factor_in)):
        role = "k" if fd == 0 else "m" if fw == 0 else "n" if fs == 0 else None
        if role is None:
            return None
        roles[role].append((extent, {"d": fd, "s": fs, "w": fw}))
    return roles


def _offsets(loops, which: str) -> np.ndarray:
    """Index offsets of every point of a loop nest (C order) along one operand."""
    offsets = np.zeros(1, dtype=np.int64)
    for extent, factors in loops:
        offsets = (offsets[:, None] + np.arange(extent) * factors[which]).reshape(-1)
    return offsets


class GeneralPlan:
    """Any loop nest: every micro-op iteration's (dst, src, wgt), grouped for BLAS."""

    def __init__(self, cfg: Config, dst, src, widx):
        self.cfg, self.dst, self.src, self.widx = cfg, dst, src, widx

    def products(self, inp_f: np.ndarray, wgt_t: np.ndarray):
        return accumulate_products(self.cfg, inp_f, wgt_t, self.dst, self.src, self.widx)


def accumulate_products(cfg: Config, inp: np.ndarray, wgt_t: np.ndarray, dst: np.ndarray,
                        src: np.ndarray, widx: np.ndarray):
    """Return (rows, sums): the sorted distinct dst rows and the int64 products per row."""
    rows, slot = _compact(dst, cfg.acc_depth)
    dtype = exact_float(cfg, len(dst))
    if dtype is None:
        prods = np.einsum("nbi,nio->nbo", inp[src].astype(np.int64), wgt_t[widx].astype(np.int64))
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
        _add_stacked(sums, slot, inp, wgt_t, src, widx)
        return rows, sums.astype(np.int64)
    ends = np.r_[starts[1:], len(keys)]
    unique_pairs = _distinct(slot * key_range + keys, len(rows) * key_range) == len(keys)
    for first, last in zip(starts.tolist(), ends.tolist()):
        members = order[first:last]
        if by_wgt:
            prods = _products_one_wgt(inp, wgt_t, src[members], widx[members[0]])
        else:
            prods = _products_one_inp(inp, wgt_t, src[members[0]], widx[members])
        if unique_pairs:
            sums[slot[members]] += prods
        else:
            np.add.at(sums, slot[members], prods)
    return rows, sums.astype(np.int64)


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


# The products below contract over one block_in only: exact in the copies' float type.
def _products_one_wgt(inp, wgt_t, src, w):
    a = inp[src]                                   # (n, batch, block_in)
    n, batch, block_in = a.shape
    return (a.reshape(n * batch, block_in) @ wgt_t[w]).reshape(n, batch, -1)


def _products_one_inp(inp, wgt_t, s, widx):
    w = wgt_t[widx]                                # (n, block_in, block_out)
    n, block_in, block_out = w.shape
    prods = inp[s] @ w.transpose(1, 0, 2).reshape(block_in, n * block_out)  # (batch, n*bo)
    return prods.reshape(-1, n, block_out).transpose(1, 0, 2)


def _add_stacked(sums, slot, inp, wgt_t, src, widx, chunk=1 << 16):
    for first in range(0, len(src), chunk):
        part = slice(first, first + chunk)
        prods = np.matmul(inp[src[part]], wgt_t[widx[part]])
        np.add.at(sums, slot[part], prods)
