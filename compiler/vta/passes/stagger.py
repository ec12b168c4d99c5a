"""Epilogue staggering: a thread's ALU epilogue and store move up next to its last GEMM
(and, first, each thread's weight load moves above its input loads).

With virtual threads the expanded stream ends a tile as

    GEMM t0, GEMM t1, SAT t0, SAT t1, STORE t0, STORE t1, (next tile) reset t0 ...

and the next tile's first micro-op on thread 0's entries must wait until thread 0's store
has read them (the exec pipe writes the out buffer with every micro-op): only SAT t1 runs
in between, shorter than the store. Moved up as far as their data allow,

    GEMM t0, SAT t0, STORE t0, GEMM t1, SAT t1, STORE t1, reset t0 ...

thread 0's store runs beside thread 1's last GEMM. An ALU instruction (with the LOAD UOP
of its micro-op kernel) or a STORE moves above compute instructions it shares no SRAM
entry with, and only when it stops at a compute instruction whose result it reads (a
STORE also behind the STORE before it: stores keep their order): an instruction that
starts a tile (a reset pass) stays where it is. Stores keep their order; loads keep theirs
but for a thread's WGT load, which moves above the INP loads since the previous WGT load
(its step's inputs), so the step's first GEMM, on the first channel block, waits for the
weights and one input block instead of all of them. insert_deps then derives the tokens
from the new order.
"""
from __future__ import annotations

from vtalab.spec import Config
from vtalab.spec.isa import AluInsn, GemmInsn, MemInsn, Mem

from ..stream import Record, Stream


def stagger_epilogues(stream: Stream, cfg: Config) -> Stream:
    out: list = []
    for rec in _weights_first(stream.records):
        if _mover(rec):
            group, at = _bubble(out, rec)
            out[at:at] = group
        else:
            out.append(rec)
    stream.records = out
    return stream


def _weights_first(recs: list) -> list:
    """Each run of consecutive loads with its WGT loads first: a step's first GEMM (the
    first channel block) then waits for the weights and one input block, not all."""
    out, run = [], []
    for rec in recs + [None]:
        if rec is not None and rec.unit == "load" and isinstance(rec.insn, MemInsn):
            run.append(rec)
            continue
        out += _wgt_before_its_inputs(run)
        run = []
        if rec is not None:
            out.append(rec)
    return out


def _wgt_before_its_inputs(run: list) -> list:
    """Each WGT load moved above the INP loads since the previous WGT load (a thread's
    step: its inputs, then its weights)."""
    out, since = [], 0
    for rec in run:
        if rec.insn.mem == Mem.WGT:
            out.insert(since, rec)
            since = len(out)
        else:
            out.append(rec)
    return out


def _mover(rec: Record) -> bool:
    return isinstance(rec.insn, AluInsn) or (rec.unit == "store" and isinstance(rec.insn, MemInsn))


def _bubble(out: list, rec: Record) -> tuple[list, int]:
    """(records to insert, position): ``rec`` with the uop loads it pulled along, as high
    as it may go; where it may not move, (``[rec]``, the end), ``out`` unchanged."""
    group, k, pulled = [rec], len(out), []
    while k > 0:
        above = out[k - 1]
        if not _conflict(group, above):
            if not _passable(rec, above):
                break
            k -= 1
            continue
        if _uop_load(above) and rec.unit == "compute" and _reads_from(group, above):
            group.insert(0, above)          # the kernel's load moves with its ALU
            pulled.append(k - 1)
            k -= 1
            continue
        if _is_compute_op(above) and _reads_from(group, above):
            return _take(out, group, k, pulled)
        break
    if rec.unit == "store" and k < len(out) and k > 0 and _is_store(out[k - 1]):
        return _take(out, group, k, pulled)      # behind the store before it
    return [rec], len(out)


def _take(out: list, group: list, k: int, pulled: list) -> tuple[list, int]:
    for idx in pulled:                       # descending: indices stay valid
        del out[idx]
    return group, k


def _is_store(rec: Record) -> bool:
    return rec.unit == "store"


def _passable(rec: Record, above: Record) -> bool:
    return above.unit == "compute" and not _finish(above)


def _is_compute_op(rec: Record) -> bool:
    return isinstance(rec.insn, (GemmInsn, AluInsn))


def _uop_load(rec: Record) -> bool:
    return rec.unit == "compute" and isinstance(rec.insn, MemInsn) and rec.insn.mem == Mem.UOP


def _finish(rec: Record) -> bool:
    return not isinstance(rec.insn, (GemmInsn, AluInsn, MemInsn))


def _ranges(recs, what: str):
    return [r for rec in recs for r in getattr(rec, what)]


def _overlap(a, b) -> bool:
    return any(ab == bb and alo <= bhi and blo <= ahi
               for ab, alo, ahi in a for bb, blo, bhi in b)


def _conflict(group: list, other: Record) -> bool:
    reads, writes = _ranges(group, "reads"), _ranges(group, "writes")
    return (_overlap(writes, other.writes) or _overlap(writes, other.reads)
            or _overlap(reads, other.writes))


def _reads_from(group: list, other: Record) -> bool:
    return _overlap(_ranges(group, "reads"), other.writes)
