"""The one seam between programs and accelerators: the ``Device`` protocol and its registry.

Every backend (the functional simulator now; the Verilator RTL model and FPGA boards
later) implements the same protocol, so runtime tests and compiled programs run on any of
them unchanged. A backend subclasses ``DeviceBase`` and supplies three primitives: write
bytes to DRAM, read bytes from DRAM, and run ``count`` instructions fetched from a DRAM
byte address. Allocation, bounds checks, copies and the context manager are shared, and so
is the validator (runtime/validate.py) every run passes first, so that an illegal program
stops with the same error on every backend before it runs: ``validate=False`` (for the
device, or for one run) skips it for trusted programs; each backend still stops an illegal
one with the same kind of error, naming the same instruction, from its own checks.
"""
from __future__ import annotations

import abc
import importlib
from dataclasses import dataclass
from typing import Callable, Protocol, runtime_checkable

import numpy as np

from vtalab.spec import Config, load_config
from vtalab.spec.errors import DeviceError
from vtalab.spec.isa import INSN_BYTES

from .alloc import DramAllocator
from .validate import Validator

BUFFERS = ("uop", "inp", "wgt", "acc", "out")


@dataclass(frozen=True, eq=False)
class Buffer:
    """A block of device DRAM: physical byte address ``addr``, size ``nbytes``."""
    device: "DeviceBase"
    addr: int
    nbytes: int

    def write(self, data, offset: int = 0) -> None:
        self.device.copy_in(self, data, offset)

    def read(self, dtype=np.uint8, shape=None, offset: int = 0) -> np.ndarray:
        return self.device.copy_out(self, dtype, shape, offset)

    def free(self) -> None:
        self.device.free(self)

    def __repr__(self):
        return f"Buffer(addr={self.addr:#x}, nbytes={self.nbytes})"


@runtime_checkable
class Device(Protocol):
    """What every backend offers. Counters are a dict of name -> int."""
    cfg: Config
    backend: str

    def alloc(self, nbytes: int, align: int | None = None) -> Buffer: ...
    def free(self, buf: Buffer) -> None: ...
    def copy_in(self, buf: Buffer, data, offset: int = 0) -> None: ...
    def copy_out(self, buf: Buffer, dtype=np.uint8, shape=None, offset: int = 0) -> np.ndarray: ...
    def run(self, insn_addr: int, insn_count: int, validate: bool | None = None) -> dict: ...
    def close(self) -> None: ...


def default_alignment(cfg: Config) -> int:
    """Alignment that makes any buffer's address a whole number of entries of any kind."""
    return max(64, *(cfg.entry_bytes(buf) for buf in BUFFERS))


class DeviceBase(abc.ABC):
    """Shared behaviour of all backends; subclasses implement the three ``_`` primitives."""
    backend = "abstract"

    def __init__(self, cfg: Config, dram_bytes: int, validate: bool = True):
        if not isinstance(cfg, Config):
            raise DeviceError(f"cfg must be a Config, not {type(cfg).__name__}")
        if not isinstance(validate, bool):
            raise DeviceError(f"validate must be True or False, not {validate!r}")
        self.cfg = cfg
        self.dram_bytes = dram_bytes
        self.validate = validate
        self.validator = Validator(cfg, dram_bytes)
        self.allocator = DramAllocator(dram_bytes, align=default_alignment(cfg))
        self.last_counters: dict = {}
        self._closed = False

    # ---- backend primitives -------------------------------------------------------------
    @abc.abstractmethod
    def _write_dram(self, addr: int, data: np.ndarray) -> None:
        """Copy ``data`` (uint8) to DRAM byte address ``addr``."""

    @abc.abstractmethod
    def _read_dram(self, addr: int, nbytes: int) -> np.ndarray:
        """``nbytes`` bytes of DRAM from ``addr`` as uint8."""

    @abc.abstractmethod
    def _execute(self, insn_addr: int, insn_count: int) -> dict:
        """Run the instructions; return the counters."""

    def _release(self) -> None:
        """Free backend resources at close (optional)."""

    # ---- memory -------------------------------------------------------------------------
    def alloc(self, nbytes: int, align: int | None = None) -> Buffer:
        self._check_open()
        return Buffer(self, self.allocator.alloc(nbytes, align), nbytes)

    def free(self, buf: Buffer) -> None:
        self._check_open()
        self._check_buffer(buf)
        self.allocator.free(buf.addr)

    def copy_in(self, buf: Buffer, data, offset: int = 0) -> None:
        """Write ``data`` (bytes-like or array, little-endian, C order) at ``offset``."""
        self._check_open()
        self._check_buffer(buf)
        raw = _as_bytes(data)
        self._check_span(buf, offset, raw.size)
        self._write_dram(buf.addr + offset, raw)

    def copy_out(self, buf: Buffer, dtype=np.uint8, shape=None, offset: int = 0) -> np.ndarray:
        """Read an array of ``dtype`` (little-endian) and ``shape`` starting at ``offset``.

        Without ``shape``, reads as many whole elements as fit between ``offset`` and the
        end of the buffer.
        """
        self._check_open()
        self._check_buffer(buf)
        dtype = np.dtype(dtype).newbyteorder("<")
        if shape is None:
            count = max(buf.nbytes - offset, 0) // dtype.itemsize
            shape = (count,)
        shape = (shape,) if isinstance(shape, int) else tuple(shape)
        nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
        self._check_span(buf, offset, nbytes)
        raw = np.array(self._read_dram(buf.addr + offset, nbytes), dtype=np.uint8, copy=True)
        return raw.view(dtype).reshape(shape)

    # ---- execution ----------------------------------------------------------------------
    def run(self, insn_addr: int, insn_count: int, validate: bool | None = None) -> dict:
        """Run ``insn_count`` instructions fetched from DRAM byte address ``insn_addr``,
        validated first unless ``validate`` (default: the device's) is False."""
        self._check_open()
        if isinstance(insn_addr, Buffer):
            insn_addr = insn_addr.addr
        if not isinstance(insn_addr, int) or insn_addr < 0 or insn_addr % INSN_BYTES:
            raise DeviceError(f"insn_addr must be a non-negative multiple of {INSN_BYTES}, "
                              f"not {insn_addr!r}")
        if isinstance(insn_count, bool) or not isinstance(insn_count, int) or insn_count <= 0:
            raise DeviceError(f"insn_count must be a positive integer, not {insn_count!r}")
        end = insn_addr + insn_count * INSN_BYTES
        if end > self.dram_bytes:
            raise DeviceError(f"instructions {insn_addr:#x}..{end - 1:#x} must lie inside "
                              f"DRAM ({self.dram_bytes} bytes)")
        if self.validate if validate is None else validate:
            raw = np.asarray(self._read_dram(insn_addr, end - insn_addr)).tobytes()
            self.validator.check(raw, self._read_dram_within)
        self.last_counters = dict(self._execute(insn_addr, insn_count))
        return dict(self.last_counters)

    def _read_dram_within(self, addr: int, nbytes: int) -> np.ndarray:
        """DRAM bytes from ``addr``, cut short (or empty) where they would leave it."""
        nbytes = max(0, min(nbytes, self.dram_bytes - addr))
        return np.asarray(self._read_dram(addr, nbytes)) if nbytes else np.zeros(0, np.uint8)

    # ---- life cycle ---------------------------------------------------------------------
    @property
    def closed(self) -> bool:
        return self._closed

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._release()

    def __enter__(self):
        self._check_open()
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    def __repr__(self):
        state = "closed" if self._closed else f"{self.allocator.used_bytes} B allocated"
        return f"<{type(self).__name__} {self.backend} {self.cfg.name} ({state})>"

    # ---- checks -------------------------------------------------------------------------
    def _check_open(self) -> None:
        if self._closed:
            raise DeviceError(f"{self.backend} device must be open, not closed")

    def _check_buffer(self, buf) -> None:
        if not isinstance(buf, Buffer):
            raise DeviceError(f"buffer must be a Buffer from alloc(), not {type(buf).__name__}")
        if buf.device is not self:
            raise DeviceError(f"buffer must belong to this {self.backend} device, not to "
                              f"{buf.device!r}")
        if buf.addr not in self.allocator or self.allocator.size_of(buf.addr) != buf.nbytes:
            raise DeviceError(f"buffer must be live, not freed ({buf!r})")

    @staticmethod
    def _check_span(buf: Buffer, offset: int, nbytes: int) -> None:
        if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
            raise DeviceError(f"offset must be a non-negative integer, not {offset!r}")
        if offset + nbytes > buf.nbytes:
            raise DeviceError(f"copy of {nbytes} bytes at offset {offset} must fit in the "
                              f"buffer of {buf.nbytes} bytes, not end at {offset + nbytes}")


def _as_bytes(data) -> np.ndarray:
    if isinstance(data, (bytes, bytearray, memoryview)):
        return np.frombuffer(data, dtype=np.uint8)
    if isinstance(data, np.ndarray):
        array = np.ascontiguousarray(data)
        if array.dtype.byteorder == ">":
            array = array.astype(array.dtype.newbyteorder("<"))
        return array.reshape(-1).view(np.uint8)
    raise DeviceError(f"data must be bytes or a numpy array, not {type(data).__name__}")


# ---- registry ---------------------------------------------------------------------------

#: the runtime's own backends; others (the board driver in vtalab.fpga, or a package of
#: someone else's) arrive through the "vtalab.backends" entry-point group or
#: `register_backend`, so the runtime names no layer above it
_BACKENDS: dict[str, "str | Callable[..., DeviceBase]"] = {
    "fsim": "vtalab.runtime.fsim_device:FsimDevice",
    "rtl": "vtalab.runtime.rtl_device:RtlDevice",
}
ENTRY_POINT_GROUP = "vtalab.backends"
_PLUGINS_LOADED = []


def _load_plugins() -> None:
    """Backends declared by installed packages (``[project.entry-points."vtalab.backends"]``
    ``name = "module:factory"``), read once; a registered name is not replaced."""
    if _PLUGINS_LOADED:
        return
    _PLUGINS_LOADED.append(True)
    from importlib.metadata import entry_points
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        _BACKENDS.setdefault(ep.name, ep.value)


def register_backend(name: str, factory: "str | Callable[..., DeviceBase]") -> None:
    """Make ``open_device(name, cfg)`` call ``factory(cfg, **options)``.

    ``factory`` is a callable or a lazy ``"module:attribute"`` reference.
    """
    if not isinstance(name, str) or not name:
        raise DeviceError(f"backend name must be a non-empty string, not {name!r}")
    _BACKENDS[name] = factory


def backend_names() -> list[str]:
    _load_plugins()
    return sorted(_BACKENDS)


def open_device(backend: str = "fsim", cfg: "Config | str | None" = None, **options) -> Device:
    """Open a device of the named backend for ``cfg`` (a Config, preset name or file)."""
    _load_plugins()
    try:
        factory = _BACKENDS[backend]
    except (KeyError, TypeError):
        raise DeviceError(f"backend must be one of {backend_names()}, not {backend!r}") from None
    cfg = load_config(cfg)
    if isinstance(factory, str):
        module, _, attr = factory.partition(":")
        factory = getattr(importlib.import_module(module), attr)
    return factory(cfg, **options)
