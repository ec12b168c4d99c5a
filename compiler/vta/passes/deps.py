"""Dependency-token insertion from the SRAM hazards between the three modules.

The load module writes inp/wgt that compute reads (RAW: load pushes l2c, compute pops),
and must not overwrite them while compute still reads them (WAR: compute pushes c2l, load
pops); compute writes out that store reads (RAW: c2s) and must not overwrite it before the
store has read it (WAR: s2c). For each instruction that conflicts with an instruction of
another module not yet ordered before it, the latest instruction of that module pushes a
token and this one pops it. The token is pushed by the latest *conflicting* instruction
of the other module (not simply its latest one), so that with virtual threads thread 0's
GEMMs wait only for thread 0's loads while thread 1's loads are still running: the
double-buffered pipeline. Pushes on one queue stay in program order because everything up
to a push is ordered once its token is popped. Every push precedes its pop in program
order, so the program order itself is a valid execution: no deadlock, no leftover tokens.
"""
from __future__ import annotations

from vtalab.spec import Config
from vtalab.spec.isa import FinishInsn

from ..stream import Record, Stream

# (popping unit, pushing unit) -> (pop flag, push flag, buffers checked)
_EDGES = {
    ("compute", "load"): ("pop_prev", "push_next"),
    ("load", "compute"): ("pop_next", "push_prev"),
    ("store", "compute"): ("pop_prev", "push_next"),
    ("compute", "store"): ("pop_next", "push_prev"),
}
_CROSS = {"inp": ("load", "compute"), "wgt": ("load", "compute"), "out": ("compute", "store")}


def insert_deps(stream: Stream, cfg: Config) -> Stream:
    recs = stream.records
    if not recs or not isinstance(recs[-1].insn, FinishInsn):
        recs.append(Record(FinishInsn(), "compute"))
    pending: dict = {unit: [] for unit in ("load", "compute", "store")}
    last: dict = {}
    for i, rec in enumerate(recs):
        is_finish = isinstance(rec.insn, FinishInsn)
        for other in _neighbours(rec.unit):
            if is_finish and pending[other]:
                at = last[other]
            else:
                at = _latest_conflict(rec, pending[other])
            if at is not None:
                pop, push = _EDGES[(rec.unit, other)]
                recs[at].set_flags(**{push: True})
                rec.set_flags(**{pop: True})
                pending[other] = [p for p in pending[other]
                                  if p[1] != rec.unit or p[0] > at]
        for buf, lo, hi in rec.writes:
            if buf in _CROSS:
                pending[rec.unit].append((i, _peer(rec.unit, buf), buf, lo, hi, True))
        for buf, lo, hi in rec.reads:
            if buf in _CROSS:
                pending[rec.unit].append((i, _peer(rec.unit, buf), buf, lo, hi, False))
        last[rec.unit] = i
    return stream


def _neighbours(unit: str):
    return ("load", "store") if unit == "compute" else ("compute",)


def _peer(unit: str, buf: str) -> str:
    a, b = _CROSS[buf]
    return b if unit == a else a


def _latest_conflict(rec: Record, pending: list):
    """Index of the latest still-unordered instruction of another module that ``rec``
    conflicts with, or None."""
    if not pending:
        return None
    mine = [(buf, lo, hi, True) for buf, lo, hi in rec.writes] + \
           [(buf, lo, hi, False) for buf, lo, hi in rec.reads]
    latest = None
    for idx, peer, buf, lo, hi, write in pending:
        if peer != rec.unit or (latest is not None and idx <= latest):
            continue
        for mbuf, mlo, mhi, mwrite in mine:
            if mbuf == buf and (write or mwrite) and mlo <= hi and lo <= mhi:
                latest = idx
                break
    return latest
