"""From the accelerator pipeline's instruction stream to the runtime's `Program`.

The compiler emits a `vtalab.runtime.Program`: the instructions with each dram_base
relative to the parameter buffer it refers to (a symbolic relocation), the micro-op image
(relocated against ``UOP_SYMBOL``), and the parameter and output buffers. Placing and
running is the runtime's: ``program.run_io(device, inputs)`` on any Device.
"""
from __future__ import annotations

import numpy as np

from vtalab.runtime.program import UOP_SYMBOL, BufferSpec, Program
from vtalab.spec import Config

from .stream import Stream

__all__ = ["UOP_SYMBOL", "program_from_stream"]


def buffer_spec(buffer) -> BufferSpec:
    """A TE buffer's spec (a joined stream's params are specs already)."""
    if isinstance(buffer, BufferSpec):
        return buffer
    return BufferSpec(buffer.name, tuple(buffer.shape), str(np.dtype(buffer.dtype.numpy)))


def program_from_stream(cfg: Config, name: str, stream: Stream) -> Program:
    records = stream.records
    relocs = tuple((i, r.reloc) for i, r in enumerate(records) if r.reloc is not None)
    return Program.from_instructions(
        cfg, [r.insn for r in records], stream.uop_words, relocs,
        tuple(buffer_spec(b) for b in stream.params), tuple(b.name for b in stream.outputs),
        name)
