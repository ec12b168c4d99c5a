"""The board driver: the ``Device`` protocol over a ``RegisterBus`` and a ``DmaMemory``.

    from vtalab.fpga.driver import open_board
    with open_board("pynq-z1") as dev:               # /dev/mem registers + pynq/udmabuf memory
        ...                                          # the same calls as on "fsim" and "rtl"

Device addresses are the accelerator's (physical) byte addresses: the allocator hands out
``[memory.base, memory.base + memory.size)``. A run writes INSN_ADDR and INSN_COUNT,
pulses START, polls STATUS until done and reads the performance counters; all offsets
come from ``spec.regs``. Opening checks CONFIG_ID against the config. A run that set
STATUS.error raises what ERROR and the units' instruction indices say, exactly as the RTL
backend does (runtime/hw_errors.py); the runtime's validator runs first unless
``validate=False``.
"""
from __future__ import annotations

import time

import numpy as np

from vtalab.runtime.alloc import DramAllocator
from vtalab.runtime.device import DeviceBase, default_alignment
from vtalab.runtime.hw_errors import hardware_error
from vtalab.spec import Config, load_config
from vtalab.spec.errors import DeviceError, WatchdogError
from vtalab.spec.isa import INSN_BYTES
from vtalab.spec.regs import COUNTERS, ERROR_UNITS, STATUS_BITS, register

from .bus import DmaMemory, RegisterBus

DEFAULT_TIMEOUT_S = 10.0
WAIT_BITS = {name: name.split("_wait_") for name in STATUS_BITS if "_wait_" in name}


class FpgaDevice(DeviceBase):
    backend = "fpga"

    def __init__(self, cfg: Config, bus: RegisterBus, memory: DmaMemory,
                 timeout_s: float = DEFAULT_TIMEOUT_S, poll_s: float = 0.0,
                 validate: bool = True):
        super().__init__(cfg, memory.base + memory.size, validate)
        self.allocator = DramAllocator(memory.size, base=memory.base,
                                       align=default_alignment(cfg))
        self.bus, self.memory = bus, memory
        self.timeout_s, self.poll_s = timeout_s, poll_s
        self.check_config_id()

    # ---- registers ----------------------------------------------------------------------
    def read_reg(self, name: str) -> int:
        reg = register(name)
        value = 0
        for word in range(reg.words):
            value |= self.bus.read32(reg.offset + 4 * word) << (32 * word)
        return value

    def write_reg(self, name: str, value: int) -> None:
        reg = register(name)
        for word in range(reg.words):
            self.bus.write32(reg.offset + 4 * word, value >> (32 * word) & 0xFFFFFFFF)

    def status(self) -> set[str]:
        value = self.read_reg("status")
        return {name for name, bit in STATUS_BITS.items() if value >> bit & 1}

    def check_config_id(self) -> None:
        found = self.read_reg("config_id")
        if found != self.cfg.config_id:
            self.close()
            raise DeviceError(f"CONFIG_ID must be {self.cfg.config_id:#010x} (config "
                              f"{self.cfg.name}), not {found:#010x}: the bitstream was built "
                              f"for another config")

    # ---- backend primitives -------------------------------------------------------------
    def _write_dram(self, addr: int, data: np.ndarray) -> None:
        self.memory.write(addr - self.memory.base, data)

    def _read_dram(self, addr: int, nbytes: int) -> np.ndarray:
        return self.memory.read(addr - self.memory.base, nbytes)

    def _execute(self, insn_addr: int, insn_count: int) -> dict:
        if insn_addr < self.memory.base:
            raise DeviceError(f"insn_addr must lie in the DMA memory from "
                              f"{self.memory.base:#x}, not {insn_addr:#x}")
        self.memory.sync_for_device()
        self.write_reg("insn_addr", insn_addr)
        self.write_reg("insn_count", insn_count)
        self.write_reg("start", 1)
        self._wait_done()
        self.memory.sync_for_cpu()
        if "error" in self.status():
            found = {"error": self.read_reg("error")}
            found.update({f"error_{unit}_insn": self.read_reg(f"error_{unit}_insn")
                          for unit in ERROR_UNITS})
            raw = np.asarray(self._read_dram(insn_addr, insn_count * INSN_BYTES)).tobytes()
            raise hardware_error(self.cfg, raw, found, self.dram_bytes)
        return {name: self.read_reg(name) for name in COUNTERS}

    def _wait_done(self) -> None:
        deadline = time.monotonic() + self.timeout_s
        while True:
            state = self.status()
            if "done" in state:
                return
            if time.monotonic() > deadline:
                waits = [f"{module} waits on queue {queue}"
                         for name, (module, queue) in sorted(WAIT_BITS.items()) if name in state]
                raise WatchdogError(f"the board must finish within {self.timeout_s:g} s, not "
                                    f"still be running; " + ("; ".join(waits) or
                                                            "no module waits on a token"))
            if self.poll_s:
                time.sleep(self.poll_s)

    def _release(self) -> None:
        for part in (self.memory, self.bus):
            if part is not None:
                part.close()
        self.bus = self.memory = None


# ---- opening a board ---------------------------------------------------------------------
def open_board(cfg: "Config | str | None" = None, reg_base: "int | None" = None,
               uio: "str | None" = None, udmabuf: "str | None" = None,
               dma_bytes: int = 64 << 20, **options) -> FpgaDevice:
    """The device of this Linux board: registers via UIO (``uio`` name) or /dev/mem at
    ``reg_base``; DMA memory from u-dma-buf (``udmabuf`` name) or else pynq.allocate."""
    from .bus import MmioBus, PynqMemory, UdmabufMemory, find_uio
    cfg = load_config(cfg if cfg is not None else "pynq-z1")
    if uio is not None:
        bus = MmioBus(find_uio(uio))
    else:
        bus = MmioBus("/dev/mem", reg_base if reg_base is not None else _default_base(cfg))
    try:
        memory = UdmabufMemory(udmabuf) if udmabuf else PynqMemory(dma_bytes)
    except BaseException:
        bus.close()
        raise
    return FpgaDevice(cfg, bus, memory, **options)


def open_uart_board(cfg: "Config | str", port: str, dram_bytes: int, baud: int = 115200,
                    **options) -> FpgaDevice:
    """An open-flow board (ULX3S, OrangeCrab) through its UART bridge and on-chip DRAM."""
    from .bus import UartBus, UartLink, UartMemory
    link = UartLink(port, baud)
    return FpgaDevice(load_config(cfg), UartBus(link), UartMemory(link, dram_bytes), **options)


def _default_base(cfg: Config) -> int:
    """The register address of the SoC board named like the config (else the PYNQ-Z1's)."""
    from .boards import BOARDS
    board = BOARDS.get(cfg.name)
    soc = board.soc if board is not None and board.soc is not None else BOARDS["pynq-z1"].soc
    return soc.reg_base


def open_device(cfg: "Config | str | None" = None, **options) -> FpgaDevice:
    """Factory of the runtime backend "fpga": ``open_device("fpga", cfg, **options)``.

    ``bus`` and ``memory`` given: use them (e.g. the RTL harness); ``port`` given: the UART
    bridge; otherwise the Linux board (``open_board``).
    """
    cfg = load_config(cfg)
    if "bus" in options or "memory" in options:
        try:
            bus, memory = options.pop("bus"), options.pop("memory")
        except KeyError:
            raise DeviceError("bus and memory must be given together, not one of them") from None
        return FpgaDevice(cfg, bus, memory, **options)
    if "port" in options:
        return open_uart_board(cfg, **options)
    return open_board(cfg, **options)

