"""ALU micro-op loops with VTA's semantics, vectorised where micro-ops are independent."""
from __future__ import annotations

import numpy as np

from vtalab.spec import Config
from vtalab.spec.isa import AluOp, alu_mul, sat_fields


def wrap(values: np.ndarray, bits: int) -> np.ndarray:
    """Reduce int64 values to signed ``bits``-bit two's complement (still int64)."""
    half = 1 << (bits - 1)
    return ((values + half) & ((1 << bits) - 1)) - half


def narrow(values: np.ndarray, bits: int, dtype: np.dtype) -> np.ndarray:
    """``values`` reduced to signed ``bits``-bit two's complement, as ``dtype``."""
    if np.dtype(dtype).itemsize * 8 == bits:
        return values.astype(dtype)            # integer casts wrap modulo 2**bits
    return wrap(values.astype(np.int64), bits).astype(dtype)


def as_slice(index: np.ndarray):
    """``index`` as an equivalent slice when it is a run of consecutive rows."""
    if len(index) and index[-1] - index[0] == len(index) - 1 \
            and (len(index) == 1 or bool(np.all(np.diff(index) == 1))):
        return slice(int(index[0]), int(index[-1]) + 1)
    return index


def alu_apply(cfg: Config, op: AluOp, a: np.ndarray, b: np.ndarray,
              addend: np.ndarray | None = None) -> np.ndarray:
    """One ALU op on int64 operands holding acc-width values; result wrapped to acc_bits.

    For SAT, ``b`` is the immediate and ``addend`` the src entry (None with use_imm)."""
    if op == AluOp.SAT:
        x = a if addend is None else wrap(a + addend, cfg.acc_bits)
        shift, relu = sat_fields(cfg, int(b))
        x = _shift(cfg, x, np.int64(shift))
        top = (1 << (cfg.out_bits - 1)) - 1
        return np.clip(x, 0 if relu else -top - 1, top)
    if op == AluOp.MOV:
        return np.broadcast_to(b, np.shape(a)).astype(np.int64)
    if op == AluOp.MIN:
        return np.minimum(a, b)
    if op == AluOp.MAX:
        return np.maximum(a, b)
    if op == AluOp.ADD:
        return wrap(a + b, cfg.acc_bits)
    if op == AluOp.MUL:
        return alu_mul(cfg, a, np.int64(b) if np.ndim(b) == 0 else b)
    if op == AluOp.SHR:
        return _shift(cfg, a, wrap(b & (cfg.acc_bits - 1), cfg.shift_bits))
    raise ValueError(f"alu_opcode must be one of {[o.name for o in AluOp]}, not {op!r}")


def _shift(cfg: Config, a: np.ndarray, amount) -> np.ndarray:
    """Arithmetic shift right by a signed amount (negative: left, wrapping to acc_bits)."""
    if np.ndim(amount) == 0:                    # an immediate: one direction only
        amount = int(amount)
        return a >> amount if amount >= 0 else wrap(a << -amount, cfg.acc_bits)
    right = a >> np.maximum(amount, 0)
    left = wrap(a << np.maximum(-amount, 0), cfg.acc_bits)
    return np.where(amount >= 0, right, left)


def hazard_free_chunks(dst: np.ndarray, src: np.ndarray | None) -> list[slice]:
    """Split the ordered micro-op sequence into runs that may execute as one vector step.

    A run breaks before a micro-op that writes a row already written in the run, or reads
    (as src) a row written earlier in the run: reading the old value would be wrong.
    """
    n = len(dst)
    if n == 0:
        return []
    if _independent(dst, src):
        return [slice(0, n)]
    chunks, start, written = [], 0, set()
    dst_list = dst.tolist()
    src_list = src.tolist() if src is not None else None
    for k in range(n):
        d = dst_list[k]
        if d in written or (src_list is not None and src_list[k] in written):
            chunks.append(slice(start, k))
            start, written = k, set()
        written.add(d)
    chunks.append(slice(start, n))
    return chunks


def _independent(dst: np.ndarray, src: np.ndarray | None) -> bool:
    order = np.argsort(dst, kind="stable")
    sorted_dst = dst[order]
    if np.any(sorted_dst[1:] == sorted_dst[:-1]):
        return False
    if src is None:
        return True
    # With unique dst rows, a src read is stale only if that row is written at an
    # earlier position.
    pos = np.searchsorted(sorted_dst, src)
    pos = np.minimum(pos, len(dst) - 1)
    hit = sorted_dst[pos] == src
    writer = order[pos]
    return not np.any(hit & (writer < np.arange(len(dst))))
