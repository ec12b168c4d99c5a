"""LOAD and STORE: 2-D strided copies between DRAM and the SRAM buffers.

A LoadPlan / StorePlan checks an instruction once and keeps numpy views of both sides
(DRAM as the buffer's element type, the SRAM tile as rows x columns), so running it again
is one or two slice assignments. The views alias the simulator's arrays, so a plan belongs
to one simulator (one DRAM array and one SramState).
"""
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


class LoadPlan:
    """One LOAD: ``run()`` copies the DRAM tile into SRAM, zero-padding inp and acc."""

    def __init__(self, cfg: Config, sram: SramState, dram: np.ndarray, insn: MemInsn):
        if insn.mem == Mem.OUT:
            raise SimError("LOAD memory_type must be UOP, WGT, INP or ACC, not OUT")
        self.buffer = buf = insn.mem.buffer
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
        shape = target.shape[1:]
        self.source = tile.view(_le(buffer_dtype(cfg, buf))).reshape(
            (y_size, insn.x_size) + shape)
        self.block = target[insn.sram_base:insn.sram_base + rows * cols].reshape(
            (rows, cols) + shape)
        self.inner = self.block[y0:y0 + y_size, x0:x0 + insn.x_size]
        self.padded = bool(y0 or y1 or x0 or x1)
        self.first, self.entries = insn.sram_base, rows * cols
        self.nbytes = y_size * insn.x_size * entry

    def run(self) -> None:
        if self.padded:
            self.block[...] = 0
        self.inner[...] = self.source


class StorePlan:
    """One STORE: ``run()`` copies out-buffer entries into the DRAM tile."""

    def __init__(self, cfg: Config, sram: SramState, dram: np.ndarray, insn: MemInsn):
        if insn.mem != Mem.OUT:
            raise SimError(f"STORE memory_type must be OUT, not {insn.mem.name}")
        entry = cfg.entry_bytes("out")
        count = insn.y_size * insn.x_size
        what = "STORE OUT"
        sram.check_range("out", insn.sram_base, count, what)
        self.tile = tile_view(dram, entry, insn.dram_base, insn.y_size, insn.x_size,
                              insn.x_stride, what)
        self.source = sram.out[insn.sram_base:insn.sram_base + count]
        self.nbytes = count * entry

    def run(self) -> None:
        source = self.source
        raw = source.astype(_le(source.dtype), copy=False).view(np.uint8)
        self.tile[...] = raw.reshape(self.tile.shape)


def execute_load(cfg: Config, sram: SramState, dram: np.ndarray, insn: MemInsn) -> int:
    """Run one LOAD; return (bytes read from DRAM, SRAM entries written)."""
    plan = LoadPlan(cfg, sram, dram, insn)
    plan.run()
    return plan.nbytes, plan.entries


def execute_store(cfg: Config, sram: SramState, dram: np.ndarray, insn: MemInsn) -> int:
    """Run one STORE (out buffer -> DRAM); return the bytes written."""
    plan = StorePlan(cfg, sram, dram, insn)
    plan.run()
    return plan.nbytes


def is_load(insn) -> bool:
    return isinstance(insn, MemInsn) and insn.opcode == Opcode.LOAD
