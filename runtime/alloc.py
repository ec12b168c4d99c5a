"""A DRAM allocator: first fit over an address-ordered free list, coalescing on free.

It hands out byte addresses inside ``[base, base + size)``; it never touches memory. Every
backend (functional simulator, RTL harness, board) manages its DRAM with one of these.
"""
from __future__ import annotations

import bisect

from vtalab.spec.errors import DeviceError


class OutOfDeviceMemory(DeviceError, MemoryError):
    """No free block of device DRAM is large enough for an allocation."""


def _check_positive_int(name: str, value) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise DeviceError(f"{name} must be a positive integer, not {value!r}")
    return value


def _check_alignment(align) -> int:
    _check_positive_int("align", align)
    if align & (align - 1):
        raise DeviceError(f"align must be a power of two, not {align}")
    return align


def _align_up(value: int, align: int) -> int:
    return (value + align - 1) & ~(align - 1)


class DramAllocator:
    """First-fit allocator of ``size`` bytes starting at byte address ``base``.

    ``alloc`` returns the start address of a block; ``free`` takes that address back.
    Freed blocks merge with free neighbours, so no fragments are left behind once
    everything is freed.
    """

    def __init__(self, size: int, *, base: int = 0, align: int = 64):
        self.size = _check_positive_int("size", size)
        if isinstance(base, bool) or not isinstance(base, int) or base < 0:
            raise DeviceError(f"base must be a non-negative integer, not {base!r}")
        self.base = base
        self.align = _check_alignment(align)
        self._free_starts: list[int] = [base]     # sorted start addresses of free blocks
        self._free_sizes: dict[int, int] = {base: size}
        self._used: dict[int, int] = {}           # start address -> size of live blocks

    # ---- queries ------------------------------------------------------------------------
    @property
    def end(self) -> int:
        return self.base + self.size

    @property
    def free_bytes(self) -> int:
        return sum(self._free_sizes.values())

    @property
    def used_bytes(self) -> int:
        return sum(self._used.values())

    @property
    def largest_free(self) -> int:
        return max(self._free_sizes.values(), default=0)

    def free_blocks(self) -> list[tuple[int, int]]:
        """(start, size) of every free block, in address order."""
        return [(start, self._free_sizes[start]) for start in self._free_starts]

    def allocations(self) -> dict[int, int]:
        """Live blocks: start address -> size in bytes."""
        return dict(self._used)

    def size_of(self, addr: int) -> int:
        """Size of the live block starting at ``addr``; DeviceError if there is none."""
        try:
            return self._used[addr]
        except (KeyError, TypeError):
            raise DeviceError(f"address must be the start of a live allocation, "
                              f"not {_describe(addr)}") from None

    def __contains__(self, addr: int) -> bool:
        return addr in self._used

    # ---- allocation ---------------------------------------------------------------------
    def alloc(self, nbytes: int, align: int | None = None) -> int:
        """Reserve ``nbytes`` bytes aligned to ``align`` (default: the allocator's)."""
        _check_positive_int("nbytes", nbytes)
        align = self.align if align is None else _check_alignment(align)
        for position, start in enumerate(self._free_starts):
            block_size = self._free_sizes[start]
            addr = _align_up(start, align)
            if addr + nbytes <= start + block_size:
                self._take(position, start, block_size, addr, nbytes)
                return addr
        raise OutOfDeviceMemory(
            f"allocation of {nbytes} bytes (aligned to {align}) must fit in a free DRAM "
            f"block, not exceed the largest one ({self.largest_free} bytes; "
            f"{self.free_bytes} of {self.size} bytes free)")

    def _take(self, position: int, start: int, block_size: int, addr: int, nbytes: int):
        del self._free_starts[position]
        del self._free_sizes[start]
        if addr > start:                       # alignment gap stays free
            self._insert_free(start, addr - start)
        tail = start + block_size - (addr + nbytes)
        if tail:
            self._insert_free(addr + nbytes, tail)
        self._used[addr] = nbytes

    def free(self, addr: int) -> int:
        """Release the block starting at ``addr``; return its size."""
        nbytes = self.size_of(addr)
        del self._used[addr]
        self._insert_free(addr, nbytes)
        self._coalesce_around(addr)
        return nbytes

    def _insert_free(self, start: int, nbytes: int) -> None:
        bisect.insort(self._free_starts, start)
        self._free_sizes[start] = nbytes

    def _coalesce_around(self, addr: int) -> None:
        position = bisect.bisect_left(self._free_starts, addr)
        if position + 1 < len(self._free_starts):
            self._merge(position)               # with the following block
        if position > 0:
            self._merge(position - 1)           # with the preceding block

    def _merge(self, position: int) -> None:
        """Merge free block ``position`` with the next one if they touch."""
        start, following = self._free_starts[position], self._free_starts[position + 1]
        if start + self._free_sizes[start] == following:
            self._free_sizes[start] += self._free_sizes.pop(following)
            del self._free_starts[position + 1]

    def reset(self) -> None:
        """Free everything at once."""
        self._free_starts = [self.base]
        self._free_sizes = {self.base: self.size}
        self._used = {}


def _describe(addr) -> str:
    return f"{addr:#x}" if isinstance(addr, int) and not isinstance(addr, bool) else repr(addr)
