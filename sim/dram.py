"""Strided 2-D views of the flat DRAM, in units of one buffer entry."""
from __future__ import annotations

import numpy as np
from numpy.lib.stride_tricks import as_strided

from vtalab.spec.errors import MemoryAccessError


def tile_view(dram: np.ndarray, entry_bytes: int, dram_base: int, y_size: int, x_size: int,
              x_stride: int, what: str) -> np.ndarray:
    """A (y_size, x_size, entry_bytes) uint8 view of DRAM rows ``dram_base + y * x_stride``.

    The view aliases DRAM, so writing into it stores. Out-of-range tiles raise.
    """
    if y_size == 0 or x_size == 0:
        return np.zeros((y_size, x_size, entry_bytes), dtype=np.uint8)
    if y_size > 1 and x_stride < x_size:
        raise MemoryAccessError(f"{what}: x_stride must be at least x_size ({x_size}) when "
                                f"y_size > 1, not {x_stride}")
    last = dram_base + (y_size - 1) * x_stride + x_size
    limit = dram.size // entry_bytes
    if last > limit:
        raise MemoryAccessError(
            f"{what}: DRAM elements {dram_base}..{last - 1} must lie below {limit} "
            f"({dram.size} bytes of DRAM / {entry_bytes} bytes per element)")
    start = dram_base * entry_bytes
    return as_strided(dram[start:], shape=(y_size, x_size, entry_bytes),
                      strides=(x_stride * entry_bytes, entry_bytes, 1))
