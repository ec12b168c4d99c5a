"""Micro-kernels (a micro-op sequence inside up to two affine loops) and the uop SRAM cache.

A ``UopKernel`` is what VTA's runtime records between ``VTAUopLoopBegin`` / ``VTAUopPush`` /
``VTAUopLoopEnd``: the micro-ops go to the uop SRAM, the loops and the mode (GEMM or ALU,
reset, ALU opcode and immediate) go into the GEMM/ALU instruction that runs them. The
``KernelRecorder`` offers VTA's recording calls; ``UopCache`` decides where in the uop SRAM
each distinct kernel lives, so a repeated kernel is loaded once.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from vtalab.spec import Isa
from vtalab.spec.errors import ProgramError
from vtalab.spec.isa import AluOp, Uop

GEMM, ALU = "gemm", "alu"
MAX_LOOPS = 2


@dataclass(frozen=True)
class Loop:
    """One affine loop level: ``extent`` iterations, index factors per iteration."""
    extent: int
    dst_factor: int = 0
    src_factor: int = 0
    wgt_factor: int = 0

    def __post_init__(self):
        if isinstance(self.extent, bool) or not isinstance(self.extent, int) or self.extent < 1:
            raise ProgramError(f"loop extent must be a positive integer, not {self.extent!r}")
        for name in ("dst_factor", "src_factor", "wgt_factor"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ProgramError(f"loop {name} must be a non-negative integer, not {value!r}")


@dataclass(frozen=True)
class UopKernel:
    """A recorded micro-kernel. ``loops`` are outermost first (at most two)."""
    mode: str
    uops: tuple[Uop, ...]
    loops: tuple[Loop, ...] = ()
    reset: bool = False
    overwrite: bool = False         # GEMM only: acc := inp x wgt (opcode GEMM_OVERWRITE)
    alu_op: AluOp | None = None
    use_imm: bool = False
    imm: int = 0

    def __post_init__(self):
        if self.mode not in (GEMM, ALU):
            raise ProgramError(f"kernel mode must be 'gemm' or 'alu', not {self.mode!r}")
        if not self.uops:
            raise ProgramError("kernel must have at least one micro-op, not 0")
        if len(self.loops) > MAX_LOOPS:
            raise ProgramError(f"kernel must have at most {MAX_LOOPS} loops, "
                               f"not {len(self.loops)}")
        if self.mode == ALU and self.alu_op is None:
            raise ProgramError("an ALU kernel's alu_op must be an AluOp, not None")
        if self.mode == GEMM and (self.alu_op is not None or self.use_imm):
            raise ProgramError("a GEMM kernel must not set alu_op or use_imm")
        if self.mode == ALU and (self.reset or self.overwrite):
            raise ProgramError("an ALU kernel must not set reset or overwrite (ALU ignores "
                               "them)")

    @classmethod
    def gemm(cls, uops, loops=(), reset: bool = False, overwrite: bool = False) -> "UopKernel":
        """A GEMM kernel from (dst, src, wgt) triples and Loop/tuple loop levels; with
        ``overwrite`` each micro-op writes its products instead of adding them."""
        return cls(GEMM, _uops(uops), _loops(loops), reset=bool(reset),
                   overwrite=bool(overwrite))

    @classmethod
    def alu(cls, alu_op, uops, loops=(), imm: int | None = None) -> "UopKernel":
        """An ALU kernel; with ``imm`` the operand is the immediate, else acc[src]."""
        op = _alu_op(alu_op)
        return cls(ALU, _uops(uops), _loops(loops), alu_op=op,
                   use_imm=imm is not None, imm=0 if imm is None else imm)

    def words(self, isa: Isa) -> np.ndarray:
        """The micro-ops as the uint32 words the uop SRAM holds (range-checked)."""
        dst, src, wgt = (np.array([getattr(u, f) for u in self.uops], dtype=np.int64)
                         for f in ("dst", "src", "wgt"))
        return isa.encode_uops(dst, src, wgt)

    def loop_fields(self) -> dict:
        """iter_out/iter_in and the factor fields of the instruction running this kernel."""
        levels = list(self.loops) + [Loop(1)] * (MAX_LOOPS - len(self.loops))
        fields = {}
        for level, suffix in zip(levels, ("out", "in")):
            fields[f"iter_{suffix}"] = level.extent
            fields[f"dst_factor_{suffix}"] = level.dst_factor
            fields[f"src_factor_{suffix}"] = level.src_factor
            if self.mode == GEMM:
                fields[f"wgt_factor_{suffix}"] = level.wgt_factor
        return fields

    def __len__(self):
        return len(self.uops)


def _uops(uops) -> tuple[Uop, ...]:
    result = []
    for item in uops:
        if isinstance(item, Uop):
            result.append(item)
        else:
            try:
                result.append(Uop(*item))
            except TypeError:
                raise ProgramError(f"micro-op must be a Uop or a (dst, src[, wgt]) tuple, "
                                   f"not {item!r}") from None
    return tuple(result)


def _loops(loops) -> tuple[Loop, ...]:
    return tuple(level if isinstance(level, Loop) else Loop(*level) for level in loops)


def _alu_op(value) -> AluOp:
    try:
        return AluOp[value.upper()] if isinstance(value, str) else AluOp(value)
    except (KeyError, ValueError):
        raise ProgramError(f"alu_op must be one of {[o.name for o in AluOp]}, "
                           f"not {value!r}") from None


class KernelRecorder:
    """VTA's recording calls: ``loop_begin`` / ``push`` / ``loop_end``, then ``finish``.

    As in VTA, all loops begin before the first micro-op, at most two loops nest, and every
    push of one kernel agrees on mode, reset, ALU opcode and immediate.
    """

    def __init__(self):
        self._loops: list[Loop] = []
        self._open = 0
        self._uops: list[Uop] = []
        self._mode: dict | None = None

    def loop_begin(self, extent: int, dst_factor: int = 0, src_factor: int = 0,
                   wgt_factor: int = 0) -> None:
        if self._uops:
            raise ProgramError("loop_begin must come before the kernel's first micro-op push, "
                               f"not after {len(self._uops)} pushes")
        if len(self._loops) == MAX_LOOPS:
            raise ProgramError(f"kernel loops must nest at most {MAX_LOOPS} deep, not "
                               f"{MAX_LOOPS + 1}")
        self._loops.append(Loop(extent, dst_factor, src_factor, wgt_factor))
        self._open += 1

    def loop_end(self) -> None:
        if self._open == 0:
            raise ProgramError("loop_end must match a loop_begin, not come without one")
        self._open -= 1

    def push(self, dst: int, src: int, wgt: int = 0, *, mode: str = GEMM, reset: bool = False,
             overwrite: bool = False, alu_op=None, use_imm: bool = False, imm: int = 0) -> None:
        """Record one micro-op (VTAUopPush)."""
        signature = {"mode": mode, "reset": bool(reset), "overwrite": bool(overwrite),
                     "alu_op": None if alu_op is None else _alu_op(alu_op),
                     "use_imm": bool(use_imm), "imm": imm}
        if self._mode is None:
            self._mode = signature
        for key, value in signature.items():
            if self._mode[key] != value:
                raise ProgramError(f"every push of one kernel must have the same {key} "
                                   f"({self._mode[key]!r}), not {value!r}")
        self._uops.append(Uop(dst, src, wgt))

    def finish(self) -> UopKernel:
        if self._open:
            raise ProgramError(f"kernel loops must all be closed by loop_end, not leave "
                               f"{self._open} open")
        if self._mode is None:
            raise ProgramError("kernel must have at least one micro-op, not 0")
        return UopKernel(uops=tuple(self._uops), loops=tuple(self._loops), **self._mode)


class UopCache:
    """Where each distinct micro-op sequence lives in a uop SRAM of ``depth`` entries.

    Kernels are placed one after another; one that no longer fits wraps to entry 0, and
    every cached kernel it overlaps is evicted (VTA's runtime policy).
    """

    def __init__(self, depth: int):
        self.depth = depth
        self._next = 0
        self._entries: dict[bytes, tuple[int, int]] = {}
        self.hits = self.misses = self.evictions = 0

    def place(self, words: np.ndarray) -> tuple[int, int, bool]:
        """(begin, end, hit) for the kernel whose uop words are ``words``."""
        key = words.tobytes()
        if key in self._entries:
            self.hits += 1
            return (*self._entries[key], True)
        size = len(words)
        if size > self.depth:
            raise ProgramError(f"kernel of {size} micro-ops must fit the uop buffer "
                               f"(uop_depth {self.depth}), not exceed it")
        begin = self._next if self._next + size <= self.depth else 0
        end = begin + size
        self._evict(begin, end)
        self._entries[key] = (begin, end)
        self._next = end
        self.misses += 1
        return begin, end, False

    def _evict(self, begin: int, end: int) -> None:
        stale = [key for key, (b, e) in self._entries.items() if b < end and begin < e]
        for key in stale:
            del self._entries[key]
        self.evictions += len(stale)

    def __contains__(self, words: np.ndarray) -> bool:
        return words.tobytes() in self._entries

    def __len__(self):
        return len(self._entries)

    def stats(self) -> dict:
        return {"uop_cache_hits": self.hits, "uop_cache_misses": self.misses,
                "uop_cache_evictions": self.evictions}
