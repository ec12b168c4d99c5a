"""A finished program: instructions plus micro-ops, placed in device DRAM to run.

The uop loads' ``dram_base`` fields are kept relative to the start of the program's uop
array until the program is placed; ``instructions(uop_base)`` resolves them.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

import numpy as np

from vtalab.spec import Config, Isa
from vtalab.spec.errors import DeviceError
from vtalab.spec.isa import INSN_BYTES, UOP_BYTES, Instruction


@dataclass
class Program:
    """Instructions for one Config; ``uop_loads`` index the LOAD UOPs to relocate."""
    cfg: Config
    insns: list[Instruction]
    uop_words: np.ndarray
    uop_loads: tuple[int, ...] = ()
    stats: dict = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.insns)

    def instructions(self, uop_base: int = 0) -> list[Instruction]:
        """The instructions with uop loads pointing at ``uop_base`` (in 4-byte words)."""
        insns = list(self.insns)
        for index in self.uop_loads:
            insn = insns[index]
            insns[index] = dataclasses.replace(insn, dram_base=insn.dram_base + uop_base)
        return insns

    def encode(self, uop_base: int = 0) -> bytes:
        """The instruction stream as the fetch unit reads it (16-byte little-endian words)."""
        return Isa(self.cfg).encode_program(self.instructions(uop_base))

    def disasm(self, uop_base: int = 0) -> str:
        isa = Isa(self.cfg)
        return "\n".join(f"{k:5d}  {isa.disasm(insn)}"
                         for k, insn in enumerate(self.instructions(uop_base)))

    def run(self, device) -> dict:
        """Place the uops and instructions in ``device`` DRAM, run, free; return counters."""
        if device.cfg != self.cfg:
            raise DeviceError(f"device config must match the program's (fingerprint "
                              f"{self.cfg.fingerprint()}), not {device.cfg.fingerprint()}")
        placed = []
        try:
            uop_base = 0
            if len(self.uop_words):
                uop_buf = device.alloc(len(self.uop_words) * UOP_BYTES)
                placed.append(uop_buf)
                device.copy_in(uop_buf, self.uop_words.astype("<u4"))
                uop_base = uop_buf.addr // UOP_BYTES
            stream = self.encode(uop_base)
            insn_buf = device.alloc(len(stream), align=max(INSN_BYTES, 64))
            placed.append(insn_buf)
            device.copy_in(insn_buf, stream)
            return device.run(insn_buf.addr, len(self.insns))
        finally:
            for buf in placed:
                if not getattr(device, "closed", False):
                    device.free(buf)
