"""Packing matrices into the accelerator's blocked DRAM layouts, and back.

inp: (M, K) -> (M/batch, K/block_in) entries of (batch, block_in)
wgt: (N, K) -> (N/block_out, K/block_in) entries of (block_out, block_in)
acc/out: (M, N) -> (M/batch, N/block_out) entries of (batch, block_out)
"""
from __future__ import annotations

import numpy as np

from vtalab.spec import Config
from vtalab.spec.errors import ProgramError

_BLOCKS = {"inp": ("batch", "block_in"), "wgt": ("block_out", "block_in"),
           "acc": ("batch", "block_out"), "out": ("batch", "block_out")}


def _blocks(cfg: Config, buffer: str) -> tuple[int, int]:
    rows, cols = _BLOCKS[buffer]
    return getattr(cfg, rows), getattr(cfg, cols)


def pack(cfg: Config, buffer: str, matrix: np.ndarray) -> np.ndarray:
    """(R, C) matrix -> (R/br, C/bc, br, bc) blocked array in ``buffer``'s entry layout."""
    br, bc = _blocks(cfg, buffer)
    rows, cols = matrix.shape
    for name, size, block in (("rows", rows, br), ("columns", cols, bc)):
        if size % block:
            raise ProgramError(f"{buffer} matrix {name} must be a multiple of {block}, "
                               f"not {size}")
    return np.ascontiguousarray(
        matrix.reshape(rows // br, br, cols // bc, bc).transpose(0, 2, 1, 3))


def unpack(cfg: Config, buffer: str, blocked: np.ndarray) -> np.ndarray:
    """Inverse of ``pack``: (R/br, C/bc, br, bc) -> (R, C)."""
    nr, nc, br, bc = blocked.shape
    return blocked.transpose(0, 2, 1, 3).reshape(nr * br, nc * bc)
