"""A compiled accelerator kernel in its storable form.

`AccelKernel` is what a module keeps of a compiled `Program` (compiler/vta): the encoded
128-bit instructions with DRAM addresses relative to the buffer each one refers to, the
relocations naming those buffers, the parameter shapes and the micro-op DRAM image. It is
plain data (bytes, arrays, names), so it round-trips through a module file, and binds to
any device by resolving the relocations against the byte addresses of the buffers.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from vtalab.spec import Config, Isa
from vtalab.spec.isa import INSN_BYTES, UOP_BYTES, Mem, MemInsn

from ..errors import CompileError
from ..vta.program import UOP_SYMBOL, Program


@dataclass(frozen=True)
class Param:
    name: str
    shape: tuple[int, ...]
    dtype: str

    @property
    def nbytes(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64)) * np.dtype(self.dtype).itemsize


@dataclass
class AccelKernel:
    name: str
    code: bytes                        # encoded instructions, dram_base buffer-relative
    relocs: tuple[tuple[int, str], ...]  # (instruction index, buffer name)
    params: tuple[Param, ...]
    outputs: tuple[str, ...]
    uop_words: np.ndarray              # uint32 micro-op image

    @classmethod
    def from_program(cls, program: Program) -> "AccelKernel":
        isa = Isa(program.cfg)
        records = program.stream.records
        relocs = tuple((i, r.reloc) for i, r in enumerate(records) if r.reloc is not None)
        params = tuple(Param(b.name, tuple(b.shape), str(np.dtype(b.dtype.numpy)))
                       for b in program.params)
        return cls(program.name, isa.encode_program([r.insn for r in records]), relocs,
                   params, tuple(b.name for b in program.outputs),
                   np.asarray(program.uop_words, np.uint32))

    def __len__(self) -> int:
        return len(self.code) // 16

    def param(self, name: str) -> Param:
        for p in self.params:
            if p.name == name:
                return p
        raise CompileError(f"parameter must be one of {[p.name for p in self.params]}, "
                           f"not {name!r}")

    def instructions(self, cfg: Config, bases: dict[str, int]) -> list:
        """Decoded instructions with every relocated dram_base made absolute (``bases``:
        buffer name -> byte address, including the micro-op image under UOP_SYMBOL)."""
        insns = Isa(cfg).decode_program(self.code)
        for index, buffer in self.relocs:
            insn = insns[index]
            size = UOP_BYTES if insn.mem == Mem.UOP else cfg.entry_bytes(insn.mem.buffer)
            base = bases[buffer]
            if base % size:
                raise CompileError(f"address of {buffer} must be a multiple of {size} bytes, "
                                   f"not {base}")
            insns[index] = dataclasses.replace(insn, dram_base=insn.dram_base + base // size)
        return insns

    def encoded(self, cfg: Config, bases: dict[str, int]) -> bytes:
        """The instruction stream with relocations resolved, patched in place: only the
        dram_base fields of the relocated instructions change (no decode/encode of the
        whole stream; the same checks as `instructions`)."""
        isa = Isa(cfg)
        field, kind = isa.mem["dram_base"], isa.mem["memory_type"]
        code = bytearray(self.code)
        for index, buffer in self.relocs:
            at = index * INSN_BYTES
            word = int.from_bytes(code[at:at + INSN_BYTES], "little")
            mem = Mem(kind.extract(word))
            size = UOP_BYTES if mem == Mem.UOP else cfg.entry_bytes(mem.buffer)
            base = bases[buffer]
            if base % size:
                raise CompileError(f"address of {buffer} must be a multiple of {size} bytes, "
                                   f"not {base}")
            value = field.check(field.extract(word) + base // size, isa.mem.name)
            word = word & ~(field.mask << field.lsb) | field.insert(value)
            code[at:at + INSN_BYTES] = word.to_bytes(INSN_BYTES, "little")
        return bytes(code)

    def disasm(self, cfg: Config) -> list[str]:
        isa = Isa(cfg)
        names = dict(self.relocs)
        return [isa.disasm(insn) + (f" @{names[i]}" if i in names else "")
                for i, insn in enumerate(isa.decode_program(self.code))]

    # ---- storage ------------------------------------------------------------------------
    def manifest(self) -> dict:
        return {"name": self.name, "relocs": [list(r) for r in self.relocs],
                "params": [[p.name, list(p.shape), p.dtype] for p in self.params],
                "outputs": list(self.outputs)}

    @classmethod
    def from_manifest(cls, data: dict, code: bytes, uop_words: np.ndarray) -> "AccelKernel":
        return cls(data["name"], bytes(code), tuple((int(i), str(b)) for i, b in data["relocs"]),
                   tuple(Param(n, tuple(s), d) for n, s, d in data["params"]),
                   tuple(data["outputs"]), np.asarray(uop_words, np.uint32))


__all__ = ["AccelKernel", "Param", "UOP_SYMBOL", "MemInsn"]
