"""Micro-op kernels loaded once, up front: every LOAD UOP moves to the start of the stream.

codegen loads each kernel just before its first use. A LOAD UOP stops the compute module
(it runs in order) until its DMA is done, and that DMA queues on the bus behind the load
module's tiles: on a 512-channel 3x3 conv one such load took 2,249 cycles for a few
hundred words. Where no kernel's entries are loaded twice (codegen reuses the buffer only
when it is full), every LOAD UOP can run first; those whose entries and DRAM words are
contiguous merge into one (codegen places kernels in first-use order in both).
"""
from __future__ import annotations

import dataclasses

from vtalab.spec import Config
from vtalab.spec.isa import MEMOP_SIZE_BITS, Mem, MemInsn

from ..stream import Record, Stream


def prefetch_uops(stream: Stream, cfg: Config) -> Stream:
    loads = [r for r in stream.records if _uop_load(r)]
    ranges = sorted(r.writes[0][1:] for r in loads)
    if len(loads) < 2 or any(a[1] >= b[0] for a, b in zip(ranges, ranges[1:])):
        return stream                          # a kernel's entries reloaded: keep the order
    rest = [r for r in stream.records if not _uop_load(r)]
    stream.records = _merged(loads) + rest
    return stream


def _uop_load(rec: Record) -> bool:
    return rec.unit == "compute" and isinstance(rec.insn, MemInsn) and rec.insn.mem == Mem.UOP


def _merged(loads: list) -> list:
    out = [loads[0]]
    limit = (1 << MEMOP_SIZE_BITS) - 1
    for rec in loads[1:]:
        last, i = out[-1].insn, rec.insn
        if (i.sram_base == last.sram_base + last.x_size
                and i.dram_base == last.dram_base + last.x_size
                and last.x_size + i.x_size <= limit):
            size = last.x_size + i.x_size
            insn = dataclasses.replace(last, x_size=size, x_stride=size)
            out[-1] = Record(insn, "compute", out[-1].reloc,
                             writes=(("uop", last.sram_base, last.sram_base + size - 1),))
        else:
            out.append(rec)
    return out
