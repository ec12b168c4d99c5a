"""The static validator every device runs before a program (``validate=False`` skips it).

It finds the same first error as the functional simulator and the hardware, before
anything runs, naming the instruction index, the field, its value and the limit:

1. the program-order rules (spec/legality.py: encodings, flags, stride, micro-op range,
   tokens, one FINISH last): the first instruction that breaks one, index ``f``;
2. before ``f``, in program order, what the instructions access: LOAD/STORE entries inside
   their SRAM buffer and elements inside the DRAM, and every GEMM/ALU micro-op index inside
   its buffer, with the micro-ops the program's uop LOADs bring from DRAM (read as DRAM is
   before the run; entries no LOAD of this program wrote are not checked).

The first of those is raised. Verdicts are cached per program and micro-op bytes, so a
program run again costs a dictionary lookup and the reads of its micro-op areas.
"""
from __future__ import annotations

from collections import OrderedDict
from typing import Callable, Sequence

import numpy as np

from vtalab.spec import Config, Isa
from vtalab.spec.errors import MemoryAccessError, VtaError
from vtalab.spec.isa import UOP_BYTES, AluInsn, GemmInsn, Mem, MemInsn, Opcode
from vtalab.spec.legality import first_violation, insn_name, words_of

CACHE_SIZE = 256
ReadDram = Callable[[int, int], np.ndarray]        # (byte address, bytes) -> uint8


def validate(cfg: Config, program, read_dram: ReadDram | None = None,
             dram_bytes: int | None = None) -> None:
    """Raise the program's first error. ``program``: instruction bytes, words or objects;
    ``read_dram`` reads the micro-ops the uop LOADs fetch (without it micro-op indices are
    not checked); ``dram_bytes`` bounds every DRAM access (without it DRAM is not checked)."""
    error = verdict(cfg, program, read_dram, dram_bytes)
    if error is not None:
        raise error


def verdict(cfg: Config, program, read_dram: ReadDram | None = None,
            dram_bytes: int | None = None) -> VtaError | None:
    """The error ``validate`` would raise, or None."""
    return _walk(cfg, program, read_dram, dram_bytes)[0]


def reads_stale_uops(cfg: Config, program, read_dram: ReadDram,
                     dram_bytes: int | None = None) -> bool:
    """Whether a GEMM/ALU before the first error uses micro-op entries no LOAD of this
    program wrote: its indices, and so its verdict, depend on the runs before."""
    return _walk(cfg, program, read_dram, dram_bytes)[1].stale


def _walk(cfg: Config, program, read_dram, dram_bytes):
    if isinstance(program, (bytes, bytearray, memoryview)):
        program = words_of(bytes(program))
    insns, violation = first_violation(cfg, list(program))
    walk = _Accesses(cfg, read_dram, dram_bytes)
    for index, insn in enumerate(insns):
        error = walk.check(index, insn)
        if error is not None:
            return error, walk
    return (None if violation is None else violation.error), walk


class Validator:
    """A device's validator: ``check(raw, read_dram)`` raises a program's first error,
    with verdicts cached per (instructions, micro-op bytes)."""

    def __init__(self, cfg: Config, dram_bytes: int):
        self.cfg, self.dram_bytes = cfg, dram_bytes
        self._uop_loads = OrderedDict()     # instruction bytes -> [(byte addr, bytes)]
        self._verdicts = OrderedDict()      # (instruction bytes, uop bytes) -> error | None

    def check(self, raw: bytes, read_dram: ReadDram) -> None:
        areas = _lookup(self._uop_loads, raw, lambda: uop_areas(self.cfg, raw))
        uops = b"".join(read_dram(addr, size).tobytes() for addr, size in areas)
        key = (raw, uops)
        error = _lookup(self._verdicts, key,
                        lambda: verdict(self.cfg, raw, read_dram, self.dram_bytes))
        if error is not None:
            raise type(error)(str(error))


def _lookup(cache: OrderedDict, key, make):
    if key in cache:
        cache.move_to_end(key)
        return cache[key]
    value = cache[key] = make()
    if len(cache) > CACHE_SIZE:
        cache.popitem(last=False)
    return value


def uop_areas(cfg: Config, raw: bytes) -> list[tuple[int, int]]:
    """(byte address, bytes) of the DRAM each legal uop LOAD of ``raw`` reads."""
    isa, areas = Isa(cfg), []
    for word in words_of(raw):
        fields = isa.mem.decode(word)
        if fields["opcode"] == Opcode.LOAD and fields["memory_type"] == Mem.UOP \
                and fields["x_size"]:
            areas.append((fields["dram_base"] * UOP_BYTES, fields["x_size"] * UOP_BYTES))
    return areas


class _Accesses:
    """SRAM, DRAM and micro-op index checks of instructions taken in program order."""

    def __init__(self, cfg: Config, read_dram: ReadDram | None, dram_bytes: int | None):
        self.cfg, self.isa = cfg, Isa(cfg)
        self.read_dram, self.dram_bytes = read_dram, dram_bytes
        self.uops = np.zeros(cfg.uop_depth, dtype=np.uint32)
        self.known = np.zeros(cfg.uop_depth, dtype=bool)   # written by this program's LOADs
        self.stale = False          # a GEMM/ALU used entries it did not write

    def check(self, index: int, insn) -> VtaError | None:
        at = f"instruction {index} ({insn_name(insn)})"
        if isinstance(insn, MemInsn):       # in the simulator's order: a LOAD's DRAM first
            dram = dram_violation(self.cfg, insn, self.dram_bytes)
            sram = sram_violation(self.cfg, insn)
            message = (dram or sram) if insn.opcode == Opcode.LOAD else (sram or dram)
            if message is None and insn.opcode == Opcode.LOAD and insn.mem == Mem.UOP:
                self._load_uops(insn)
        elif isinstance(insn, (GemmInsn, AluInsn)):
            message = self._indices(insn)
        else:
            message = None
        return None if message is None else MemoryAccessError(f"{at}: {message}")

    def _load_uops(self, insn: MemInsn) -> None:
        if self.read_dram is None or not insn.x_size:
            return
        raw = np.asarray(self.read_dram(insn.dram_base * UOP_BYTES, insn.x_size * UOP_BYTES),
                         dtype=np.uint8)
        rows = slice(insn.sram_base, insn.sram_base + insn.x_size)
        if raw.size != insn.x_size * UOP_BYTES:        # past the DRAM it can read
            self.known[rows] = False
            return
        self.uops[rows] = raw.view("<u4")
        self.known[rows] = True

    def _indices(self, insn) -> str | None:
        """The first micro-op index past its buffer, from the loop's extremes."""
        if insn.iter_out == 0 or insn.iter_in == 0 or insn.uop_end <= insn.uop_bgn:
            return None
        rows = slice(insn.uop_bgn, insn.uop_end)
        if not self.known[rows].all():
            self.stale = True
            return None
        fields = dict(zip(("dst", "src", "wgt"), self.isa.decode_uops(self.uops[rows])))
        for name, buffer in _indexed(insn):
            f_out = getattr(insn, f"{name}_factor_out")
            f_in = getattr(insn, f"{name}_factor_in")
            top = int(fields[name].max()) + (insn.iter_out - 1) * f_out \
                + (insn.iter_in - 1) * f_in
            depth = self.cfg.depth(buffer)
            if top >= depth:
                return (f"{name} index must be below {buffer}_depth {depth}, not {top} "
                        f"(micro-ops {insn.uop_bgn}..{insn.uop_end - 1}: largest {name} "
                        f"{int(fields[name].max())}, iter_out {insn.iter_out} x "
                        f"{name}_factor_out {f_out}, iter_in {insn.iter_in} x "
                        f"{name}_factor_in {f_in})")
        return None


def _indexed(insn) -> list[tuple[str, str]]:
    """(uop field, buffer) pairs an instruction's micro-ops index (as the simulator)."""
    if isinstance(insn, GemmInsn):
        return [("dst", "acc")] + ([] if insn.reset else [("src", "inp"), ("wgt", "wgt")])
    return [("dst", "acc")] + ([] if insn.use_imm else [("src", "acc")])


def sram_entries(insn: MemInsn) -> int:
    """SRAM entries a LOAD writes (pads included) or a STORE reads."""
    if insn.opcode == Opcode.STORE:
        return insn.y_size * insn.x_size
    if insn.mem == Mem.UOP:
        return insn.x_size
    if insn.mem in (Mem.INP, Mem.ACC):
        return (insn.y_pad_0 + insn.y_size + insn.y_pad_1) * \
            (insn.x_pad_0 + insn.x_size + insn.x_pad_1)
    return insn.y_size * insn.x_size


def sram_violation(cfg: Config, insn: MemInsn) -> str | None:
    entries, buffer = sram_entries(insn), Mem(insn.mem).buffer
    depth = cfg.depth(buffer)
    if entries and insn.sram_base + entries > depth:
        return (f"{buffer} entries {insn.sram_base}..{insn.sram_base + entries - 1} must lie "
                f"inside the {buffer} buffer: sram_base {insn.sram_base} + {entries} entries "
                f"must be at most {buffer}_depth {depth}, not {insn.sram_base + entries}")
    return None


def dram_violation(cfg: Config, insn: MemInsn, dram_bytes: int | None) -> str | None:
    """Why ``insn``'s DRAM elements are not all inside ``dram_bytes`` of DRAM, or None."""
    if dram_bytes is None:
        return None
    rows = 1 if insn.mem == Mem.UOP else insn.y_size
    if rows == 0 or insn.x_size == 0:
        return None
    entry = cfg.entry_bytes(Mem(insn.mem).buffer)
    stride = insn.x_size if insn.mem == Mem.UOP else insn.x_stride
    last = insn.dram_base + (rows - 1) * stride + insn.x_size
    limit = dram_bytes // entry
    if last > limit:
        return (f"DRAM elements {insn.dram_base}..{last - 1} must lie below {limit} "
                f"({dram_bytes} bytes of DRAM / {entry} bytes per element): dram_base "
                f"{insn.dram_base}, y_size {rows}, x_stride {stride}, x_size {insn.x_size}")
    return None


def first_dram_violation(cfg: Config, insns: Sequence, dram_bytes: int) -> int | None:
    """The index of the first instruction of ``insns`` that reaches past DRAM."""
    for index, insn in enumerate(insns):
        if isinstance(insn, MemInsn) and dram_violation(cfg, insn, dram_bytes):
            return index
    return None
