"""Architectural state of the accelerator: the five SRAM buffers, as numpy arrays."""
from __future__ import annotations

import numpy as np

from vtalab.spec import Config
from vtalab.spec.errors import MemoryAccessError

BUFFERS = ("uop", "inp", "wgt", "acc", "out")


def int_dtype(bits: int) -> np.dtype:
    return np.dtype({8: np.int8, 16: np.int16, 32: np.int32, 64: np.int64}[bits])


def buffer_dtype(cfg: Config, buffer: str) -> np.dtype:
    if buffer == "uop":
        return np.dtype(np.uint32)
    return int_dtype(cfg.elem_bits(buffer))


class SramState:
    """The SRAM buffers of one accelerator, indexed by entry: ``sram.acc[row]``."""

    def __init__(self, cfg: Config):
        self.cfg = cfg
        for buf in BUFFERS:
            shape = (cfg.depth(buf),) if buf == "uop" else (cfg.depth(buf), *cfg.elem_shape(buf))
            setattr(self, buf, np.zeros(shape, dtype=buffer_dtype(cfg, buf)))

    def __getitem__(self, buffer: str) -> np.ndarray:
        if buffer not in BUFFERS:
            raise KeyError(f"buffer must be one of {BUFFERS}, not {buffer!r}")
        return getattr(self, buffer)

    def check_range(self, buffer: str, first: int, count: int, what: str) -> None:
        """Raise unless entries [first, first + count) lie inside ``buffer`` (an access of no
        entries touches nothing, wherever it points)."""
        depth = self.cfg.depth(buffer)
        if count > 0 and (first < 0 or first + count > depth):
            raise MemoryAccessError(
                f"{what}: {buffer} entries {first}..{first + count - 1} must lie inside the "
                f"{buffer} buffer (depth {depth}, {buffer}_depth)")

    def check_indices(self, buffer: str, index: np.ndarray, what: str) -> None:
        if index.size == 0:
            return
        hi = int(index.max())
        depth = self.cfg.depth(buffer)
        if hi >= depth:
            raise MemoryAccessError(
                f"{what}: {buffer} index must be below the {buffer} depth {depth}, not {hi}")
