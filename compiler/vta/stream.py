"""The instruction stream between codegen and the token passes.

Each record is one instruction plus what the token passes need: the module that runs
it, the DRAM buffer its dram_base is relative to, and the SRAM entry ranges it reads and
writes (inclusive).
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from vtalab.spec.isa import Instruction


@dataclass
class Record:
    insn: Instruction
    unit: str                      # "load", "compute" or "store"
    reloc: str | None = None       # DRAM buffer name dram_base is relative to
    reads: tuple = ()              # ((sram buffer, lo, hi), ...)
    writes: tuple = ()

    def set_flags(self, **flags) -> None:
        self.insn = replace(self.insn, **flags)

    @property
    def dram(self) -> tuple[str | None, bool]:
        """(DRAM buffer it moves, whether it writes it): stores write their buffer, loads
        (on the load or compute module) read theirs; other instructions touch none."""
        return self.reloc, self.unit == "store"


@dataclass
class Stream:
    records: list = field(default_factory=list)
    uop_words: np.ndarray = field(default_factory=lambda: np.zeros(0, np.uint32))
    params: tuple = ()
    outputs: tuple = ()

    def __len__(self):
        return len(self.records)

