"""The swappable access layer under the board driver: a ``RegisterBus`` and a ``DmaMemory``.

On a board: ``MmioBus`` over ``/dev/mem`` or a UIO device for the registers, and
``UdmabufMemory`` (u-dma-buf) or ``PynqMemory`` (the pynq package) for physically
contiguous DMA buffers. Over a serial line (open-flow boards): ``UartBus`` + ``UartMemory``.
Here: ``RtlBus`` (the Verilator harness answers the same register reads and writes) and
``ArrayMemory`` over any numpy array.
"""
from __future__ import annotations

import mmap
import os
import struct
from pathlib import Path
from typing import Protocol, runtime_checkable

import numpy as np

from .errors import FpgaError

PAGE = mmap.PAGESIZE


@runtime_checkable
class RegisterBus(Protocol):
    def read32(self, offset: int) -> int: ...
    def write32(self, offset: int, value: int) -> None: ...
    def close(self) -> None: ...


@runtime_checkable
class DmaMemory(Protocol):
    base: int            # the accelerator's byte address of offset 0
    size: int

    def write(self, offset: int, data: np.ndarray) -> None: ...
    def read(self, offset: int, nbytes: int) -> np.ndarray: ...
    def sync_for_device(self) -> None: ...
    def sync_for_cpu(self) -> None: ...
    def close(self) -> None: ...


# ---- registers ---------------------------------------------------------------------------
class MmioBus:
    """Registers mapped from ``/dev/mem`` at physical ``base`` or from ``/dev/uioN`` (map 0)."""

    def __init__(self, path: str = "/dev/mem", base: int = 0, size: int = 4096):
        offset = base if path == "/dev/mem" else 0
        if offset % PAGE:
            raise FpgaError(f"register base must be page aligned ({PAGE}), not {base:#x}")
        try:
            self._fd = os.open(path, os.O_RDWR | os.O_SYNC)
        except OSError as exc:
            raise FpgaError(f"{path} must be readable and writable (root or a udev rule), "
                            f"not: {exc}") from None
        self._map = mmap.mmap(self._fd, max(size, PAGE), offset=offset)
        self._words = memoryview(self._map).cast("I")

    def read32(self, offset: int) -> int:
        return self._words[offset >> 2]

    def write32(self, offset: int, value: int) -> None:
        self._words[offset >> 2] = value & 0xFFFFFFFF

    def close(self) -> None:
        if self._map is not None:
            self._words.release()
            self._map.close()
            os.close(self._fd)
            self._map = None


def find_uio(name: str, root: str = "/sys/class/uio") -> str:
    """``/dev/uioN`` whose ``name`` (from the device tree) is ``name``."""
    for entry in sorted(Path(root).glob("uio*")):
        if (entry / "name").read_text().strip() == name:
            return f"/dev/{entry.name}"
    raise FpgaError(f"a UIO device named {name!r} must exist under {root}, not be missing")


class RtlBus:
    """The Verilated core's AXI4-Lite port: each access clocks the model, like a real bus."""

    def __init__(self, model):
        self.model = model

    def read32(self, offset: int) -> int:
        return self.model._lib.vt_reg_read(self.model._handle, offset)

    def write32(self, offset: int, value: int) -> None:
        self.model._lib.vt_reg_write(self.model._handle, offset, value & 0xFFFFFFFF)

    def close(self) -> None:
        self.model = None


# ---- DMA memory --------------------------------------------------------------------------
class ArrayMemory:
    """DMA memory over a numpy uint8 array (a board's mmap, the RTL model's DRAM, a test's)."""

    def __init__(self, array: np.ndarray, base: int = 0):
        self.array, self.base, self.size = array, base, int(array.size)

    def write(self, offset: int, data: np.ndarray) -> None:
        self.array[offset:offset + data.size] = data

    def read(self, offset: int, nbytes: int) -> np.ndarray:
        return np.array(self.array[offset:offset + nbytes], copy=True)

    def sync_for_device(self) -> None:
        """Uncached mappings need no cache maintenance."""

    def sync_for_cpu(self) -> None:
        """Uncached mappings need no cache maintenance."""

    def close(self) -> None:
        self.array = None


class UdmabufMemory(ArrayMemory):
    """A u-dma-buf buffer: ``/dev/<name>`` mapped uncached (O_SYNC), physical address from sysfs."""

    def __init__(self, name: str = "udmabuf0"):
        sysfs = Path("/sys/class/u-dma-buf") / name
        if not sysfs.exists():
            raise FpgaError(f"u-dma-buf device {name} must be loaded (modprobe u-dma-buf), "
                            f"not missing {sysfs}")
        base = int((sysfs / "phys_addr").read_text(), 16)
        size = int((sysfs / "size").read_text())
        self._fd = os.open(f"/dev/{name}", os.O_RDWR | os.O_SYNC)
        self._map = mmap.mmap(self._fd, size)
        super().__init__(np.frombuffer(self._map, dtype=np.uint8), base)

    def close(self) -> None:
        if self._map is not None:
            self.array = None
            self._map.close()
            os.close(self._fd)
            self._map = None


class PynqMemory(ArrayMemory):
    """A contiguous buffer from ``pynq.allocate`` (cached: flushed and invalidated around runs)."""

    def __init__(self, size: int):
        try:
            import pynq
        except ImportError:
            raise FpgaError("PynqMemory needs the pynq package (on the PYNQ image), "
                            "not missing it") from None
        self._buffer = pynq.allocate(shape=(size,), dtype=np.uint8)
        super().__init__(self._buffer, int(self._buffer.physical_address))

    def sync_for_device(self) -> None:
        self._buffer.flush()

    def sync_for_cpu(self) -> None:
        self._buffer.invalidate()

    def close(self) -> None:
        if self._buffer is not None:
            self._buffer.freebuffer()
            self._buffer = self.array = None


# ---- serial bridge (open-flow boards) ----------------------------------------------------
class UartLink:
    """The 9-byte frames of ``fpga.uart_bridge`` over a serial port (pyserial)."""

    def __init__(self, port: str, baud: int = 115200, timeout: float = 1.0):
        try:
            import serial
        except ImportError:
            raise FpgaError("the UART bridge needs pyserial (pip install pyserial), "
                            "not missing it") from None
        self.port = serial.Serial(port, baud, timeout=timeout)

    def transact(self, cmd: str, addr: int, data: int = 0) -> int:
        self.port.write(struct.pack("<BII", ord(cmd), addr, data & 0xFFFFFFFF))
        reply = self.port.read(4)
        if len(reply) != 4:
            raise FpgaError(f"the board must answer a {cmd!r} frame with 4 bytes, "
                            f"not {len(reply)}: check the port and the bitstream")
        return struct.unpack("<I", reply)[0]


class UartBus:
    def __init__(self, link: UartLink):
        self.link = link

    def read32(self, offset: int) -> int:
        return self.link.transact("r", offset)

    def write32(self, offset: int, value: int) -> None:
        self.link.transact("w", offset, value)

    def close(self) -> None:
        self.link.port.close()


class UartMemory:
    """The on-chip DRAM word by word (slow: for small programs and bring-up)."""

    def __init__(self, link: UartLink, size: int, base: int = 0):
        self.link, self.size, self.base = link, size, base

    def write(self, offset: int, data: np.ndarray) -> None:
        head = offset & 3
        padded = np.zeros((head + data.size + 3) // 4 * 4, dtype=np.uint8)
        start = offset - head
        if head or data.size % 4:
            padded[:] = self.read(start, padded.size)
        padded[head:head + data.size] = data
        for k, word in enumerate(padded.view("<u4")):
            self.link.transact("W", start + 4 * k, int(word))

    def read(self, offset: int, nbytes: int) -> np.ndarray:
        start = offset & ~3
        words = [self.link.transact("R", addr) for addr in range(start, offset + nbytes, 4)]
        raw = np.array(words, dtype="<u4").view(np.uint8)
        return raw[offset - start:offset - start + nbytes]

    def sync_for_device(self) -> None:
        pass

    def sync_for_cpu(self) -> None:
        pass

    def close(self) -> None:
        pass
