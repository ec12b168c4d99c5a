"""The instruction stream between codegen and the token passes.

Each record is one instruction plus what the token passes need: the module that runs
it, the DRAM buffer its dram_base is relative to, and the SRAM entry ranges it reads and
writes (inclusive).
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from vtalab.spec.isa import UOP_BYTES, Instruction, Mem


@dataclass
class Record:
    insn: Instruction
    unit: str                      # "load", "compute" or "store"
    reloc: str | None = None       # DRAM buffer name dram_base is relative to
    reads: tuple = ()              # ((sram buffer, lo, hi), ...)
    writes: tuple = ()

    def set_flags(self, **flags) -> None:
        self.insn = replace(self.insn, **flags)

    def dram_span(self, cfg, bases=None) -> tuple | None:
        """(DRAM region, first byte, last byte, whether it writes) of a load or store (the
        bounding interval of its rows); None for others. The region is its buffer, bytes
        relative to it, unless ``bases`` places the buffer in a shared region (``bases[buffer]
        = (region, byte offset)``: a joined program's values in one arena, where the memory
        plan reuses ranges). Stores write; loads, on the load or compute module, read."""
        insn = self.insn
        if self.reloc is None or not insn.y_size or not insn.x_size:
            return None
        size = UOP_BYTES if insn.mem == Mem.UOP else cfg.entry_bytes(insn.mem.buffer)
        last = insn.dram_base + (insn.y_size - 1) * insn.x_stride + insn.x_size
        region, base = (bases or {}).get(self.reloc, (self.reloc, 0))
        return (region, base + insn.dram_base * size, base + last * size - 1,
                self.unit == "store")


@dataclass
class Stream:
    records: list = field(default_factory=list)
    uop_words: np.ndarray = field(default_factory=lambda: np.zeros(0, np.uint32))
    params: tuple = ()
    outputs: tuple = ()
    dram_bases: dict = field(default_factory=dict)   # buffer -> (region, offset): dram_span

    def __len__(self):
        return len(self.records)
