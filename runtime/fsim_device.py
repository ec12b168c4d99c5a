"""The "fsim" backend: the bit-exact functional simulator behind the Device protocol.

With ``validate=False`` the simulator's own checks stop an illegal program, at the same
instruction and with the same kind of error as the validator (sim/fsim.py)."""
from __future__ import annotations

import numpy as np

from vtalab.sim.fsim import DEFAULT_DRAM_BYTES, FunctionalSimulator
from vtalab.spec import Config
from vtalab.spec.errors import DeviceError

from .device import DeviceBase


class FsimDevice(DeviceBase):
    """A device whose DRAM is the simulator's numpy array; runs are synchronous.

    ``sim`` is the FunctionalSimulator itself, for tests that inspect SRAM state.
    """
    backend = "fsim"

    def __init__(self, cfg: Config, dram_bytes: int = DEFAULT_DRAM_BYTES, validate: bool = True):
        if isinstance(dram_bytes, bool) or not isinstance(dram_bytes, int) or dram_bytes <= 0:
            raise DeviceError(f"dram_bytes must be a positive integer, not {dram_bytes!r}")
        super().__init__(cfg, dram_bytes, validate)
        self.sim = FunctionalSimulator(cfg, dram_bytes=dram_bytes)

    def _write_dram(self, addr: int, data: np.ndarray) -> None:
        self.sim.dram[addr:addr + data.size] = data

    def _read_dram(self, addr: int, nbytes: int) -> np.ndarray:
        return self.sim.dram[addr:addr + nbytes]

    def _execute(self, insn_addr: int, insn_count: int) -> dict:
        return self.sim.run(insn_addr, insn_count)

    def _release(self) -> None:
        self.sim = None
