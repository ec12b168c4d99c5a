"""A compiled accelerator program: instructions with DRAM relocations and a micro-op image.

``Program.instructions(bases)`` resolves each dram_base against the byte address of the
buffer it refers to; ``run_fsim`` places inputs, runs the functional simulator and returns
the outputs (a convenience for tests; devices go through the runtime).
"""
from __future__ import annotations

import numpy as np

from vtalab.spec import Config, Isa
from vtalab.spec.isa import Mem, MemInsn, UOP_BYTES

from ..errors import CompileError
from .stream import Stream

UOP_SYMBOL = "__uop__"
ALIGN = 64


class Program:
    def __init__(self, cfg: Config, name: str, stream: Stream):
        self.cfg = cfg
        self.name = name
        self.stream = stream
        self.params = stream.params
        self.outputs = stream.outputs
        self.uop_words = stream.uop_words

    def __len__(self):
        return len(self.stream.records)

    def _entry_bytes(self, insn: MemInsn) -> int:
        return UOP_BYTES if insn.mem == Mem.UOP else self.cfg.entry_bytes(insn.mem.buffer)

    def instructions(self, bases: dict) -> list:
        """Instructions with dram_base made absolute; ``bases`` maps buffer name -> byte addr."""
        out = []
        for rec in self.stream.records:
            insn = rec.insn
            if rec.reloc is not None:
                size = self._entry_bytes(insn)
                base = bases[rec.reloc]
                if base % size:
                    raise CompileError(f"address of {rec.reloc} must be a multiple of {size} "
                                       f"bytes, not {base}")
                insn = _with_dram(insn, insn.dram_base + base // size)
            out.append(insn)
        return out

    def layout(self, start: int = 4096) -> dict:
        """A DRAM placement of the parameters and the micro-op image (byte addresses)."""
        align = max([ALIGN] + [self.cfg.entry_bytes(b) for b in ("inp", "wgt", "acc", "out")])
        start = -(-start // align) * align
        bases, addr = {}, start
        sizes = [(b.name, b.size * b.dtype.bits // 8) for b in self.params]
        sizes.append((UOP_SYMBOL, len(self.uop_words) * UOP_BYTES))
        for name, size in sizes:
            bases[name] = addr
            addr += -(-max(size, 1) // align) * align
        bases["__end__"] = addr
        return bases

    def disasm(self) -> list[str]:
        """Disassembled instructions with symbolic DRAM buffers (stable across layouts)."""
        isa = Isa(self.cfg)
        return [isa.disasm(r.insn) + (f" @{r.reloc}" if r.reloc else "")
                for r in self.stream.records]

    def run_fsim(self, inputs: dict, sim=None) -> dict:
        """Run on the functional simulator; ``inputs`` maps param name -> array."""
        from vtalab.sim.fsim import FunctionalSimulator
        bases = self.layout()
        if sim is None:
            sim = FunctionalSimulator(self.cfg, dram_bytes=max(bases["__end__"] + 4096, 1 << 20))
        for b in self.params:
            if b.name in inputs:
                arr = np.ascontiguousarray(inputs[b.name], dtype=b.dtype.numpy)
                if arr.shape != b.shape:
                    raise CompileError(f"input {b.name} must have shape {b.shape}, not {arr.shape}")
                raw = arr.astype(arr.dtype.newbyteorder("<")).view(np.uint8).reshape(-1)
                sim.dram[bases[b.name]:bases[b.name] + raw.size] = raw
        raw = self.uop_words.astype("<u4").view(np.uint8)
        sim.dram[bases[UOP_SYMBOL]:bases[UOP_SYMBOL] + raw.size] = raw
        self.counters = sim.run_program(self.instructions(bases))
        outputs = {}
        for b in self.outputs:
            n = b.size * b.dtype.bits // 8
            data = sim.dram[bases[b.name]:bases[b.name] + n].copy()
            outputs[b.name] = data.view(b.dtype.numpy.newbyteorder("<")).reshape(b.shape).astype(b.dtype.numpy)
        return outputs


def _with_dram(insn: MemInsn, dram_base: int) -> MemInsn:
    import dataclasses
    return dataclasses.replace(insn, dram_base=dram_base)


def run_on_device(program: Program, device, inputs: dict) -> dict:
    """Run ``program`` on any runtime Device (fsim, rtl, board): place buffers, run, read."""
    from vtalab.spec.isa import INSN_BYTES
    cfg = program.cfg
    align = max([ALIGN] + [cfg.entry_bytes(b) for b in ("inp", "wgt", "acc", "out")])
    bufs, bases = {}, {}
    try:
        for b in program.params:
            bufs[b.name] = device.alloc(max(b.size * b.dtype.bits // 8, 1), align)
            if b.name in inputs:
                arr = np.ascontiguousarray(inputs[b.name], dtype=b.dtype.numpy)
                device.copy_in(bufs[b.name], arr.astype(arr.dtype.newbyteorder("<")).view(np.uint8))
        bufs[UOP_SYMBOL] = device.alloc(max(len(program.uop_words) * UOP_BYTES, 4), align)
        if len(program.uop_words):
            device.copy_in(bufs[UOP_SYMBOL], program.uop_words.astype("<u4").view(np.uint8))
        bases = {name: buf.addr for name, buf in bufs.items()}
        code = Isa(cfg).encode_program(program.instructions(bases))
        bufs["__insn__"] = device.alloc(len(code), INSN_BYTES)
        device.copy_in(bufs["__insn__"], np.frombuffer(code, np.uint8))
        program.counters = device.run(bufs["__insn__"].addr, len(code) // INSN_BYTES)
        return {b.name: device.copy_out(bufs[b.name], b.dtype.numpy, b.shape)
                for b in program.outputs}
    finally:
        for buf in bufs.values():
            device.free(buf)
