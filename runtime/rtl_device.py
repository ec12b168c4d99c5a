"""The "rtl" backend: the Verilated Core in a native harness behind the Device protocol.

    with open_device("rtl", "tiny") as dev:        # builds (once per config) or loads
        ...                                        # the same calls as on "fsim"
        counters = dev.run(insn_addr, count)       # cycles, busy/stall, bytes, uops, ...

Options: ``dram_bytes``; the DRAM model's ``read_latency``, ``write_latency`` and random
back-pressure ``pressure`` (probability per channel and cycle) with its ``seed``;
``cycle_limit`` (watchdog); ``timeline=True`` keeps per-instruction events of every run
in ``dev.last_timeline``; ``waveform="run.vcd"`` dumps a VCD trace (``.fst``: FST, which
needs the lz4/zlib headers) from a separate, slower traced build. ``netlist="synthesis"``
runs the Core as FPGA synthesis elaborates it (exact int8 datapath, free-running pipeline
registers) instead of the faster simulation netlist (sim/rtl/build.py; default: the
``VTALAB_RTL_NETLIST`` environment variable, else "simulation"). ``echo`` receives build
progress lines; ``validate=False`` skips the runtime's validator.

Without the validator an illegal program still stops with the error the other backends
raise, naming the same instruction: the hardware's error registers and the harness's DRAM
bounds say what was illegal (runtime/hw_errors.py). Each START clears the core's token
queues and error registers, so a bad run never affects the next one.
"""
from __future__ import annotations

from collections import OrderedDict

import numpy as np

from vtalab.sim.rtl.counters import merged
from vtalab.sim.rtl.model import (DEFAULT_CYCLE_LIMIT, MODULES, RtlModel, RtlStall, RtlWatchdog,
                                  Timing)
from vtalab.spec import Config, Isa
from vtalab.spec.errors import DeadlockError, DeviceError, IsaError, WatchdogError
from vtalab.spec.isa import INSN_BYTES, module_of
from vtalab.spec.legality import deadlock_message, insn_name

from .device import DeviceBase
from .hw_errors import hardware_error

DEFAULT_DRAM_BYTES = 64 << 20
DECODED_PROGRAMS = 256


class RtlDevice(DeviceBase):
    backend = "rtl"

    def __init__(self, cfg: Config, dram_bytes: int = DEFAULT_DRAM_BYTES, read_latency: int = 1,
                 write_latency: int = 1, pressure: float = 0.0, seed: int = 1,
                 cycle_limit: int = DEFAULT_CYCLE_LIMIT, timeline: bool = False,
                 waveform=None, echo=None, validate: bool = True, netlist: str | None = None):
        if isinstance(dram_bytes, bool) or not isinstance(dram_bytes, int) or dram_bytes <= 0:
            raise DeviceError(f"dram_bytes must be a positive integer, not {dram_bytes!r}")
        if isinstance(cycle_limit, bool) or not isinstance(cycle_limit, int) or cycle_limit < 1:
            raise DeviceError(f"cycle_limit must be a positive integer, not {cycle_limit!r}")
        super().__init__(cfg, dram_bytes, validate)
        timing = Timing(read_latency, write_latency, pressure, seed)
        trace = None if waveform is None else "fst" if str(waveform).endswith(".fst") else "vcd"
        self.model = RtlModel(cfg, dram_bytes, timing, trace=trace, echo=echo, netlist=netlist)
        if waveform is not None:
            self.model.open_trace(waveform)
        self.cycle_limit = cycle_limit
        self.timeline = timeline
        self.last_timeline = None
        self._decoded = OrderedDict()       # instruction bytes -> decoded program (LRU)

    def set_timing(self, read_latency: int = 1, write_latency: int = 1, pressure: float = 0.0,
                   seed: int = 1) -> None:
        self._check_open()
        self.model.set_timing(Timing(read_latency, write_latency, pressure, seed))

    # ---- backend primitives -------------------------------------------------------------
    def _write_dram(self, addr: int, data: np.ndarray) -> None:
        self.model.dram[addr:addr + data.size] = data

    def _read_dram(self, addr: int, nbytes: int) -> np.ndarray:
        return self.model.dram[addr:addr + nbytes]

    def _execute(self, insn_addr: int, insn_count: int) -> dict:
        raw = self.model.dram[insn_addr:insn_addr + insn_count * INSN_BYTES].tobytes()
        insns = self._decode(raw)
        try:
            hardware = self.model.run(insn_addr, insn_count, self.cycle_limit, self.timeline)
        except RtlWatchdog as exc:
            raise WatchdogError(_watchdog_message(exc, insns)) from None
        except RtlStall as exc:
            raise DeadlockError(_stall_message(exc, insns)) from None
        if self.model.last_errors:          # named by the program as it was fetched
            raise hardware_error(self.cfg, raw, self.model.last_errors, self.dram_bytes)
        counters = merged(self.cfg, insns or [], hardware)
        if self.timeline:
            from vtalab.sim.timeline import Timeline
            self.last_timeline = Timeline.from_events(self.cfg, self.model.events(), insns)
        return counters

    def _decode(self, raw: bytes):
        """The program's instructions (for counters and error messages), decoded once per
        distinct instruction stream: a model runs the same layer programs every inference."""
        if raw in self._decoded:
            self._decoded.move_to_end(raw)
            return self._decoded[raw]
        try:
            insns = Isa(self.cfg).decode_program(raw)
        except IsaError:
            insns = None         # the hardware runs it anyway; counters stay hardware-only
        self._decoded[raw] = insns
        if len(self._decoded) > DECODED_PROGRAMS:
            self._decoded.popitem(last=False)
        return insns

    def _release(self) -> None:
        self.model.close_trace()
        self.model.close()
        self.model = None


def _current(exc, module: str, insns):
    """(program index, instruction) a module is at, from how many instructions it began."""
    order = [k for k, insn in enumerate(insns or []) if module_of(insn) == module]
    current = exc.started.get(module, 0) - 1
    return (order[current], insns[order[current]]) if 0 <= current < len(order) else (None, None)


def _stall_message(exc: RtlStall, insns) -> str:
    waits = []
    for module, queue in exc.waits:
        index, insn = _current(exc, module, insns)
        if index is not None:
            waits.append((module, index, insn_name(insn), queue))
    return deadlock_message(waits, "the harness saw no module running and no bus traffic") \
        if waits else str(exc)


def _watchdog_message(exc: RtlWatchdog, insns) -> str:
    """Name each waiting module's instruction (its index in the program) and queue."""
    parts = []
    for module, queue in exc.waits:
        index, insn = _current(exc, module, insns)
        where = f"{module} module" + ("" if index is None else
                                      f" at instruction {index} ({insn_name(insn)})")
        parts.append(f"{where} waits on queue {queue}")
    what = "; ".join(parts) or "no module waits on a token"
    return (f"watchdog: the core must finish within {exc.limit} cycles, not still be running; "
            f"{what}")


__all__ = ["RtlDevice", "MODULES"]
