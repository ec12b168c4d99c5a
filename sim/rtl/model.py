"""The Verilated Core in this process: a ctypes handle on the native harness.

``RtlModel`` owns one simulated Core and its DRAM (a numpy view of the harness's memory,
so copies in and out are plain numpy slicing). ``run`` drives the control registers,
clocks the design to done and returns the hardware's performance counters; what the run
found illegal (the ERROR registers, a burst past DRAM) is left in ``last_errors`` for the
runtime to name (runtime/hw_errors.py). A cycle limit turns a hang into a WatchdogError,
and a stall (no module running, no bus traffic) into a DeadlockError, both naming the
waiting modules and queues; after those the core is reset.
"""
from __future__ import annotations

import ctypes
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

from vtalab.spec import Config
from vtalab.spec.errors import DeadlockError, DeviceError, SimError, WatchdogError
from vtalab.spec.regs import COUNTERS, ERROR_UNITS, STATUS_BITS, register

from .build import library

MODULES = ("load", "compute", "store")
# STATUS bit -> (module, queue) for the watchdog message
WAITS = {name: tuple(name.split("_wait_")) for name in STATUS_BITS if "_wait_" in name}
DEFAULT_CYCLE_LIMIT = 50_000_000
_SIGNATURES = {
    "vt_create": (ctypes.c_void_p, [ctypes.c_uint64, ctypes.c_uint64]),
    "vt_destroy": (None, [ctypes.c_void_p]),
    "vt_dram": (ctypes.c_void_p, [ctypes.c_void_p]),
    "vt_set_timing": (None, [ctypes.c_void_p, ctypes.c_uint32, ctypes.c_uint32, ctypes.c_uint32]),
    "vt_set_seed": (None, [ctypes.c_void_p, ctypes.c_uint64]),
    "vt_reset": (None, [ctypes.c_void_p]),
    "vt_reg_read": (ctypes.c_uint32, [ctypes.c_void_p, ctypes.c_uint32]),
    "vt_reg_write": (None, [ctypes.c_void_p, ctypes.c_uint32, ctypes.c_uint32]),
    "vt_run": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_uint64, ctypes.c_uint32, ctypes.c_uint64]),
    "vt_cycle": (ctypes.c_uint64, [ctypes.c_void_p]),
    "vt_error": (ctypes.c_char_p, [ctypes.c_void_p]),
    "vt_dram_error": (ctypes.c_char_p, [ctypes.c_void_p]),
    "vt_begun": (ctypes.c_uint64, [ctypes.c_void_p, ctypes.c_int]),
    "vt_timeline": (None, [ctypes.c_void_p, ctypes.c_int]),
    "vt_event_count": (ctypes.c_uint64, [ctypes.c_void_p]),
    "vt_events": (None, [ctypes.c_void_p, ctypes.c_void_p]),
    "vt_trace_open": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_char_p]),
    "vt_trace_close": (None, [ctypes.c_void_p]),
}


@lru_cache(maxsize=None)
def _load(path: str) -> ctypes.CDLL:
    lib = ctypes.CDLL(path)
    for name, (restype, argtypes) in _SIGNATURES.items():
        fn = getattr(lib, name)
        fn.restype, fn.argtypes = restype, argtypes
    return lib


@dataclass(frozen=True)
class Timing:
    """DRAM model: cycles from address to first data / to write response, and the
    probability that any AXI channel stalls in a given cycle (back-pressure)."""
    read_latency: int = 1
    write_latency: int = 1
    pressure: float = 0.0
    seed: int = 1

    def __post_init__(self):
        for name in ("read_latency", "write_latency"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < 1 << 20:
                raise DeviceError(f"{name} must be an integer in [0, 2**20), not {value!r}")
        if not isinstance(self.pressure, (int, float)) or not 0 <= self.pressure < 1:
            raise DeviceError(f"pressure must be a probability in [0, 1), not {self.pressure!r}")


class RtlModel:
    """One Core built for ``cfg`` with ``dram_bytes`` of DRAM."""

    def __init__(self, cfg: Config, dram_bytes: int, timing: Timing = Timing(),
                 trace: str | None = None, echo=None, lib_path=None,
                 netlist: str | None = None):
        self.cfg = cfg
        self.trace = trace
        self.last_errors: dict = {}
        self.lib_path = (Path(lib_path) if lib_path else
                         library(cfg, trace=trace, echo=echo, netlist=netlist))
        self._lib = _load(str(self.lib_path))
        self._handle = self._lib.vt_create(dram_bytes, timing.seed)
        pointer = ctypes.cast(self._lib.vt_dram(self._handle), ctypes.POINTER(ctypes.c_uint8))
        self.dram = np.ctypeslib.as_array(pointer, shape=(dram_bytes,))
        self.set_timing(timing)
        config_id = self.read("config_id")
        if config_id != cfg.config_id:
            self.close()
            raise DeviceError(f"CONFIG_ID must be {cfg.config_id:#010x} (config {cfg.name}), "
                              f"not {config_id:#010x}: the build is for another config")

    def set_timing(self, timing: Timing) -> None:
        self.timing = timing
        self._lib.vt_set_timing(self._handle, timing.read_latency, timing.write_latency,
                                int(timing.pressure * 65536))
        self._lib.vt_set_seed(self._handle, timing.seed)

    # ---- registers ----------------------------------------------------------------------
    def read(self, name: str) -> int:
        reg = register(name)
        value = 0
        for word in range(reg.words):
            value |= self._lib.vt_reg_read(self._handle, reg.offset + 4 * word) << (32 * word)
        return value

    def status(self) -> set[str]:
        value = self.read("status")
        return {name for name, bit in STATUS_BITS.items() if value >> bit & 1}

    def counters(self) -> dict:
        return {name: self.read(name) for name in COUNTERS}

    # ---- running ------------------------------------------------------------------------
    def run(self, insn_addr: int, insn_count: int, cycle_limit: int = DEFAULT_CYCLE_LIMIT,
            timeline: bool = False) -> dict:
        """Run to done; the hardware counters (what was illegal: ``last_errors``). Raises
        RtlWatchdog past ``cycle_limit``, RtlStall when nothing can move any more."""
        self._lib.vt_timeline(self._handle, int(timeline))
        self.last_errors = {}
        code = self._lib.vt_run(self._handle, insn_addr, insn_count, cycle_limit)
        if code in (1, 3):
            waits = self.waits()
            started = {m: self._lib.vt_begun(self._handle, k) for k, m in enumerate(MODULES)}
            self.reset()
            raise RtlWatchdog(cycle_limit, waits, started) if code == 1 else \
                RtlStall(waits, started)
        if code == 2:
            message = self._lib.vt_error(self._handle).decode()
            self.reset()
            raise SimError(f"AXI traffic must follow the protocol: {message}")
        self.last_errors = self.errors()
        return self.counters()

    def errors(self) -> dict:
        """What the last run found illegal: {} for a clean run, else STATUS.error, ERROR,
        the units' instruction indices (``error_<unit>_insn``) and ``dram`` (the first
        burst past DRAM, a message) where there are any."""
        found = {}
        dram = self._lib.vt_dram_error(self._handle).decode()
        if dram:
            found["dram"] = dram
        if "error" in self.status():
            found["error"] = self.read("error")
            for unit in ERROR_UNITS:
                found[f"error_{unit}_insn"] = self.read(f"error_{unit}_insn")
        return found

    def waits(self) -> list[tuple[str, str]]:
        """(module, queue) for each module now waiting on a dependency token."""
        return [WAITS[name] for name in sorted(self.status()) if name in WAITS]

    def events(self) -> np.ndarray:
        """Timeline of the last run: rows of (module index, start, run, end) cycles."""
        count = self._lib.vt_event_count(self._handle)
        out = np.zeros((count, 4), dtype=np.uint64)
        if count:
            self._lib.vt_events(self._handle, out.ctypes.data)
        return out

    @property
    def cycle(self) -> int:
        return self._lib.vt_cycle(self._handle)

    def reset(self) -> None:
        self._lib.vt_reset(self._handle)

    def open_trace(self, path: "str | Path") -> None:
        if not self._lib.vt_trace_open(self._handle, str(path).encode()):
            raise DeviceError("waveforms need a traced build: open the device with a "
                              "waveform path, not the fast build")

    def close_trace(self) -> None:
        self._lib.vt_trace_close(self._handle)

    def close(self) -> None:
        if self._handle:
            self.dram = None
            self._lib.vt_destroy(self._handle)
            self._handle = None


class RtlStall(DeadlockError):
    """No module running and no bus traffic for a while, yet not done: which modules wait
    on which queues, and how many instructions each began."""

    def __init__(self, waits: list, started: dict):
        self.waits, self.started = waits, started
        what = "; ".join(f"{m} module waits on queue {q}" for m, q in waits) or \
            "no module waits on a token"
        super().__init__(f"deadlock: no module can proceed; {what}")


class RtlWatchdog(WatchdogError):
    """Carries which modules wait on which queues, and how many instructions each began."""

    def __init__(self, limit: int, waits: list, started: dict):
        self.limit, self.waits, self.started = limit, waits, started
        what = "; ".join(f"{m} module waits on queue {q}" for m, q in waits) or \
            "no module waits on a token"
        super().__init__(f"watchdog: the core must finish within {limit} cycles, not still "
                         f"be running; {what}")
