"""Blocked layouts with leading batch axes (runtime/layout.py's packing, per batch index).

An operand of a batched GEMM is [G..., rows, cols]: each batch index holds one matrix,
packed as runtime/layout.py packs a matrix (rows and cols padded to their blocks, the block
axes last), so the packed array is [G..., rows', cols', block_rows, block_cols]: a run of
G packed matrices in DRAM. `batch` counts the leading axes (0: the plain packing).
"""
from __future__ import annotations

import numpy as np

from vtalab.runtime.layout import pack_array, packed_shape, unpack_array


def _to_back(array: np.ndarray, batch: int) -> np.ndarray:
    """Move the `batch` leading axes behind the next two (where pack_array keeps `rest`)."""
    return np.moveaxis(array, tuple(range(batch)), tuple(range(2, 2 + batch)))


def packed_batch_shape(shape, blocks, batch: int = 0) -> tuple[int, ...]:
    shape = tuple(shape)
    return shape[:batch] + packed_shape(shape[batch:], blocks)


def pack_batched(array: np.ndarray, blocks, batch: int = 0) -> np.ndarray:
    """Pack the two axes after `batch` leading ones, per batch index."""
    array = np.asarray(array)
    if not batch:
        return pack_array(array, blocks)
    packed = pack_array(_to_back(array, batch), blocks)           # (R', C', G..., br, bc)
    return np.ascontiguousarray(np.moveaxis(packed, tuple(range(2, 2 + batch)),
                                            tuple(range(batch))))


def unpack_batched(array: np.ndarray, shape, batch: int = 0) -> np.ndarray:
    """Inverse of `pack_batched`: back to `shape` (dropping the padding)."""
    shape = tuple(shape)
    if not batch:
        return unpack_array(array, shape)
    inner = np.moveaxis(array, tuple(range(batch)), tuple(range(2, 2 + batch)))
    plain = unpack_array(inner, shape[batch:batch + 2] + shape[:batch])
    return np.ascontiguousarray(np.moveaxis(plain, tuple(range(2, 2 + batch)),
                                            tuple(range(batch))))
