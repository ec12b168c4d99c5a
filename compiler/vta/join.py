"""Several compiled streams joined into one accelerator program.

Consecutive accelerator layers each end with a drain (the last epilogue and store while
the load and compute modules idle) and start with a fill (micro-ops, weights and the first
input block loaded while compute idles): 3-7k cycles per ResNet-18 layer. Joined, the next
layer's micro-op, bias and weight loads overlap the previous layer's last GEMMs, and only
its first input load waits for the previous layer's stores (insert_deps orders that DRAM
read-after-write). Each part's tokens are derived again on the joined stream; its own
order of instructions is kept.

A part is a finished stream (``build_with_stream``) with ``names``: each of its DRAM
parameters' name in the joined program. Parts that name one buffer alike share it (one
layer's output is the next one's input); its shape and dtype must then agree.
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from vtalab.runtime.program import UOP_SYMBOL, BufferSpec, Program
from vtalab.spec import Config
from vtalab.spec.isa import AluInsn, FinishInsn, GemmInsn, Mem, MemInsn

from ..errors import CompileError
from .passes.deps import insert_deps
from .passes.uop_prefetch import prefetch_uops
from .passes.verify_tokens import verify_tokens
from .program import buffer_spec, program_from_stream
from .stream import Record, Stream

_NO_FLAGS = dict(pop_prev=False, pop_next=False, push_prev=False, push_next=False)


def join_streams(cfg: Config, parts, name: str, shapes=None, bases=None) -> Program:
    """One Program running ``parts`` ((stream, names) pairs) in order; ``shapes``: the
    shape a buffer takes where parts view it differently (same bytes and dtype);
    ``bases``: buffers that share a DRAM region (name -> (region, byte offset): the
    module's arena, whose ranges the memory plan reuses), so that the token passes order
    and check the accesses of different buffers to the same bytes too."""
    records, uops, buffers, outputs = [], [], {}, {}
    together = _uops_fit(cfg, [stream for stream, _ in parts])
    for stream, names in parts:
        base = sum(len(u) for u in uops)
        records.extend(_moved(rec, names, base, base if together else 0)
                       for rec in stream.records if not isinstance(rec.insn, FinishInsn))
        uops.append(np.asarray(stream.uop_words, np.uint32))
        for b in stream.params:
            _add_buffer(buffers, replace(buffer_spec(b), name=names[b.name]), shapes or {})
        outputs.update(dict.fromkeys(names[b.name] for b in stream.outputs))
    joined = Stream(records, np.concatenate(uops) if uops else np.zeros(0, np.uint32),
                    tuple(buffers.values()), tuple(buffers[n] for n in outputs),
                    dict(bases or {}))
    if together:
        prefetch_uops(joined, cfg)
    return program_from_stream(cfg, name, verify_tokens(insert_deps(joined, cfg), cfg))


def _uops_fit(cfg: Config, streams) -> bool:
    """Whether every part's micro-ops fit the buffer side by side (each part keeps its
    kernels in entries [0, its image's length)): then they all load at the start, where
    compute waits for the first tiles anyway, instead of at each layer's start."""
    for stream in streams:
        ends = [hi for rec in stream.records for buf, _, hi in rec.writes if buf == "uop"]
        if ends and max(ends) >= len(stream.uop_words):
            return False
    return sum(len(s.uop_words) for s in streams) <= cfg.depth("uop")


def _moved(rec: Record, names: dict, uop_base: int, uop_shift: int) -> Record:
    """``rec`` without tokens, its DRAM buffer renamed; micro-op loads read past the
    earlier parts' micro-ops, and its micro-op entries move by ``uop_shift``."""
    insn = replace(rec.insn, **_NO_FLAGS)
    reloc = rec.reloc
    if reloc == UOP_SYMBOL:
        insn = replace(insn, dram_base=insn.dram_base + uop_base)
    elif reloc is not None:
        reloc = names[reloc]
    reads, writes = rec.reads, rec.writes
    if uop_shift:
        insn = _uops_moved(insn, uop_shift)
        reads, writes = _shifted("uop", reads, uop_shift), _shifted("uop", writes, uop_shift)
    return Record(insn, rec.unit, reloc, reads, writes)


def _uops_moved(insn, shift: int):
    if isinstance(insn, MemInsn):
        return replace(insn, sram_base=insn.sram_base + shift) if insn.mem == Mem.UOP else insn
    if isinstance(insn, (GemmInsn, AluInsn)):
        return replace(insn, uop_bgn=insn.uop_bgn + shift, uop_end=insn.uop_end + shift)
    return insn


def _shifted(buffer: str, ranges: tuple, shift: int) -> tuple:
    return tuple((b, lo + shift, hi + shift) if b == buffer else (b, lo, hi)
                 for b, lo, hi in ranges)


def _add_buffer(buffers: dict, spec: BufferSpec, shapes: dict) -> None:
    have = buffers.setdefault(spec.name, spec)
    if have == spec:
        return
    if have.dtype != spec.dtype or have.nbytes != spec.nbytes or spec.name not in shapes:
        raise CompileError(f"buffer {spec.name} of joined programs must have one size and "
                           f"dtype, not {have.shape} {have.dtype} and {spec.shape} {spec.dtype}")
    buffers[spec.name] = BufferSpec(spec.name, tuple(shapes[spec.name]), spec.dtype)
