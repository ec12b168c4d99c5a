"""The one accelerator program: instructions, a micro-op image, symbolic relocations and the
DRAM buffers it needs. The runtime builder and the compiler both produce it; only the
runtime places and runs it, on any Device.

    prog = Program.from_instructions(cfg, insns, uop_words, relocs=((3, "data"), ...),
                                     buffers=(BufferSpec("data", (1, 4, 16), "int8"), ...),
                                     outputs=("out",))
    outputs, counters = prog.run_io(device, {"data": x})     # allocate, copy, run, read
    counters = prog.run(device)                               # no buffers of its own
    code = prog.encode({"data": 0x10000, UOP_SYMBOL: 0x20000})  # byte addresses

A relocated instruction's ``dram_base`` is relative to the start of the buffer it names
(in that buffer's element units); ``encode(bases)`` adds the buffer's byte address / the
element size through the ISA's own field encoder (``Layout.with_field``; only relocated
instructions change). Every buffer is placed at ``default_alignment(cfg)``, so any element size
divides its address.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from vtalab.spec import Config, Isa
from vtalab.spec.errors import DeviceError, ProgramError
from vtalab.spec.isa import INSN_BYTES, UOP_BYTES, Mem, Opcode

UOP_SYMBOL = "__uop__"


@dataclass(frozen=True)
class BufferSpec:
    name: str
    shape: tuple
    dtype: str

    @property
    def nbytes(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64)) * np.dtype(self.dtype).itemsize


@dataclass
class Program:
    cfg: Config
    code: bytes                                   # encoded, relocations unresolved
    uop_words: np.ndarray
    relocs: tuple = ()                            # ((instruction index, buffer name), ...)
    buffers: tuple = ()                           # BufferSpec of every DRAM buffer it uses
    outputs: tuple = ()                           # names of the buffers it writes
    name: str = "program"
    stats: dict = field(default_factory=dict)
    counters: dict | None = None                  # of the last run

    @classmethod
    def from_instructions(cls, cfg: Config, insns, uop_words=None, relocs=(), buffers=(),
                          outputs=(), name: str = "program", stats=None) -> "Program":
        uops = np.zeros(0, np.uint32) if uop_words is None else np.asarray(uop_words, np.uint32)
        return cls(cfg, Isa(cfg).encode_program(list(insns)), uops, tuple(relocs),
                   tuple(buffers), tuple(outputs), name, dict(stats or {}))

    def __len__(self) -> int:
        return len(self.code) // INSN_BYTES

    @property
    def insns(self) -> list:
        """The decoded instructions, relocations unresolved."""
        return Isa(self.cfg).decode_program(self.code)

    def buffer(self, name: str) -> BufferSpec:
        for b in self.buffers:
            if b.name == name:
                return b
        raise ProgramError(f"buffer must be one of {[b.name for b in self.buffers]}, "
                           f"not {name!r}")

    # ---- relocation -------------------------------------------------------------------
    def _relocated(self, isa: Isa, word: int, index: int, name: str, bases: dict) -> int:
        """Instruction word ``index`` with its dram_base made absolute (``name``'s
        address), through the ISA's field encoder."""
        layout = isa.mem
        if Opcode(isa.opcode_field.extract(word)) not in (Opcode.LOAD, Opcode.STORE):
            raise ProgramError(f"relocated instruction {index} of program {self.name} must "
                               f"be a LOAD or STORE, not {isa.decode(word)}")
        mem = Mem(layout["memory_type"].extract(word))
        size = UOP_BYTES if mem == Mem.UOP else self.cfg.entry_bytes(mem.buffer)
        try:
            base = bases[name]
        except KeyError:
            raise ProgramError(f"address of buffer {name} must be given to place program "
                               f"{self.name}, not missing") from None
        if base % size:
            raise ProgramError(f"address of {name} must be a multiple of {size} bytes, "
                               f"not {base}")
        dram_base = layout["dram_base"].extract(word) + base // size
        return layout.with_field(word, "dram_base", dram_base)

    def instructions(self, bases: dict | None = None) -> list:
        """Decoded instructions with every relocation resolved against ``bases`` (buffer
        name -> byte address); without ``bases``, as stored (relative)."""
        return Isa(self.cfg).decode_program(self.encode(bases))

    def encode(self, bases: dict | None = None) -> bytes:
        """The instruction stream as the fetch unit reads it, relocations resolved against
        ``bases``; without ``bases``, as stored (relative)."""
        if bases is None:
            return self.code
        isa = Isa(self.cfg)
        code = bytearray(self.code)
        for index, name in self.relocs:
            at = index * INSN_BYTES
            word = int.from_bytes(code[at:at + INSN_BYTES], "little")
            word = self._relocated(isa, word, index, name, bases)
            code[at:at + INSN_BYTES] = word.to_bytes(INSN_BYTES, "little")
        return bytes(code)

    def disasm(self) -> list[str]:
        """One line per instruction, relocated ones marked ``@buffer`` (stable across
        placements)."""
        isa = Isa(self.cfg)
        names = dict(self.relocs)
        return [isa.disasm(insn) + (f" @{names[k]}" if k in names else "")
                for k, insn in enumerate(self.insns)]

    # ---- placement and running ----------------------------------------------------------
    def dram_bytes(self) -> int:
        """DRAM a device needs to place this program whole (buffers, uops, instructions)."""
        from .device import default_alignment
        align = default_alignment(self.cfg)
        sizes = [b.nbytes for b in self.buffers] + [len(self.uop_words) * UOP_BYTES,
                                                    len(self.code)]
        return sum(-(-max(s, 1) // align) * align for s in sizes)

    def place(self, device, addrs: dict | None = None):
        """Allocate (at ``default_alignment``) every buffer not in ``addrs``, the micro-op
        image and the instruction stream; copy uops and code in. Returns (bases, instruction
        byte address, owned device buffers: free them, or pass them to `release`)."""
        from .device import default_alignment
        if device.cfg.fingerprint() != self.cfg.fingerprint():
            raise DeviceError(f"device config must match the program's (fingerprint "
                              f"{self.cfg.fingerprint()}), not {device.cfg.fingerprint()}")
        align = default_alignment(self.cfg)
        bases, owned = dict(addrs or {}), {}
        try:
            for b in self.buffers:
                if b.name not in bases:
                    owned[b.name] = device.alloc(max(b.nbytes, 1), align)
                    bases[b.name] = owned[b.name].addr
            owned[UOP_SYMBOL] = device.alloc(max(len(self.uop_words) * UOP_BYTES, 4), align)
            bases[UOP_SYMBOL] = owned[UOP_SYMBOL].addr
            if len(self.uop_words):
                device.copy_in(owned[UOP_SYMBOL], self.uop_words.astype("<u4").view(np.uint8))
            code = self.encode(bases)
            owned["__insn__"] = device.alloc(len(code), max(INSN_BYTES, align))
            device.copy_in(owned["__insn__"], np.frombuffer(code, np.uint8))
        except BaseException:
            release(device, owned)
            raise
        return bases, owned["__insn__"].addr, owned

    def run(self, device, addrs: dict | None = None) -> dict:
        """Place, run and free the stream (buffers at ``addrs`` stay); the counters."""
        _, insn_addr, owned = self.place(device, addrs)
        try:
            self.counters = device.run(insn_addr, len(self))
            return self.counters
        finally:
            release(device, owned)

    def run_io(self, device, inputs: dict) -> tuple[dict, dict]:
        """Allocate every buffer, copy ``inputs`` (name -> array) in, run, read the outputs:
        (outputs by name, counters)."""
        _, insn_addr, owned = self.place(device)
        try:
            for name, array in inputs.items():
                spec = self.buffer(name)
                arr = np.ascontiguousarray(array, dtype=spec.dtype)
                if arr.shape != tuple(spec.shape):
                    raise ProgramError(f"input {name} must have shape {tuple(spec.shape)}, "
                                       f"not {arr.shape}")
                device.copy_in(owned[name], arr.astype(arr.dtype.newbyteorder("<"))
                               .view(np.uint8).reshape(-1))
            self.counters = device.run(insn_addr, len(self))
            outputs = {name: device.copy_out(owned[name], np.dtype(self.buffer(name).dtype),
                                             tuple(self.buffer(name).shape))
                       for name in self.outputs}
            return outputs, self.counters
        finally:
            release(device, owned)

    # ---- storage ------------------------------------------------------------------------
    def manifest(self) -> dict:
        return {"name": self.name, "relocs": [list(r) for r in self.relocs],
                "params": [[b.name, list(b.shape), b.dtype] for b in self.buffers],
                "outputs": list(self.outputs)}

    @classmethod
    def from_manifest(cls, cfg: Config, data: dict, code: bytes, uop_words) -> "Program":
        return cls(cfg, bytes(code), np.asarray(uop_words, np.uint32),
                   tuple((int(i), str(b)) for i, b in data["relocs"]),
                   tuple(BufferSpec(n, tuple(s), d) for n, s, d in data["params"]),
                   tuple(data["outputs"]), data["name"])


def release(device, owned: dict) -> None:
    if getattr(device, "closed", False):
        return
    for buf in reversed(list(owned.values())):
        device.free(buf)
