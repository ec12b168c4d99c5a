"""LOAD and STORE: 2-D strided copies between DRAM and the SRAM buffers."""
from __future__ import annotations

import numpy as np

from vtalab.spec import Config
from vtalab.spec.errors import SimError
from vtalab.spec.isa import MemInsn, Mem, Opcode

from .dram import tile_view
from .state import SramState, buffer_dtype

PADDED = (Mem.INP, Mem.ACC)


def _le(dtype: np.dtype) -> np.dtype:
    return dtype.newbyteorder("<")


def execute_load(cfg: Config, sram: SramState, dram: np.ndarray, insn: MemInsn) -> int:
    """Run one LOAD; return (bytes read from DRAM, SRAM entries written)."""
    buf = insn.mem.buffer
    if insn.mem == Mem.OUT:
        raise SimError("LOAD memory_type must be UOP, WGT, INP or ACC, not OUT")
    entry = cfg.entry_bytes(buf)
    if insn.mem == Mem.UOP:
        y_size, x_stride = 1, insn.x_size
    else:
        y_size, x_stride = insn.y_size, insn.x_stride
    what = f"LOAD {insn.mem.name}"
    tile = tile_view(dram, entry, insn.dram_base, y_size, insn.x_size, x_stride, what)
    if insn.mem in PADDED:
        y0, y1, x0, x1 = insn.y_pad_0, insn.y_pad_1, insn.x_pad_0, insn.x_pad_1
    else:
        y0 = y1 = x0 = x1 = 0
    rows, cols = y0 + y_size + y1, x0 + insn.x_size + x1
    sram.check_range(buf, insn.sram_base, rows * cols, what)
    target = sram[buf]
    values = tile.reshape(y_size, insn.x_size, entry).copy().view(_le(buffer_dtype(cfg, buf)))
    values = values.reshape((y_size, insn.x_size) + target.shape[1:])
    block = target[insn.sram_base:insn.sram_base + rows * cols].reshape(
        (rows, cols) + target.shape[1:])
    if y0 or y1 or x0 or x1:
        block[...] = 0
    block[y0:y0 + y_size, x0:x0 + insn.x_size] = values
    return y_size * insn.x_size * entry, rows * cols


def execute_store(cfg: Config, sram: SramState, dram: np.ndarray, insn: MemInsn) -> int:
    """Run one STORE (out buffer -> DRAM); return the bytes written."""
    if insn.mem != Mem.OUT:
        raise SimError(f"STORE memory_type must be OUT, not {insn.mem.name}")
    entry = cfg.entry_bytes("out")
    count = insn.y_size * insn.x_size
    what = "STORE OUT"
    sram.check_range("out", insn.sram_base, count, what)
    tile = tile_view(dram, entry, insn.dram_base, insn.y_size, insn.x_size, insn.x_stride, what)
    source = sram.out[insn.sram_base:insn.sram_base + count]
    raw = np.ascontiguousarray(source).astype(_le(source.dtype), copy=False).view(np.uint8)
    tile[...] = raw.reshape(insn.y_size, insn.x_size, entry)
    return count * entry


def is_load(insn) -> bool:
    return isinstance(insn, MemInsn) and insn.opcode == Opcode.LOAD
