"""Dependency-token insertion from the SRAM hazards between the three modules.

The load module writes inp/wgt that compute reads (RAW: load pushes l2c, compute pops),
and must not overwrite them while compute still reads them (WAR: compute pushes c2l, load
pops); compute writes out that store reads (RAW: c2s) and must not overwrite it before the
store has read it (WAR: s2c). For each instruction that conflicts with an instruction of
another module not yet ordered before it, the latest instruction of that module pushes a
token and this one pops it. Every push precedes its pop in program order, so the program
order itself is a valid execution: no deadlock, no leftover tokens.
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
                hazard = True
            else:
                hazard = _conflicts(rec, pending[other])
            if hazard:
                pop, push = _EDGES[(rec.unit, other)]
                recs[last[other]].set_flags(**{push: True})
                rec.set_flags(**{pop: True})
                pending[other] = [p for p in pending[other] if p[0] != rec.unit]
        for buf, lo, hi in rec.writes:
            if buf in _CROSS:
                pending[rec.unit].append((_peer(rec.unit, buf), buf, lo, hi, True))
        for buf, lo, hi in rec.reads:
            if buf in _CROSS:
                pending[rec.unit].append((_peer(rec.unit, buf), buf, lo, hi, False))
        last[rec.unit] = i
    return stream


def _neighbours(unit: str):
    return ("load", "store") if unit == "compute" else ("compute",)


def _peer(unit: str, buf: str) -> str:
    a, b = _CROSS[buf]
    return b if unit == a else a


def _conflicts(rec: Record, pending: list) -> bool:
    """Whether ``rec`` conflicts with an access of another module still unordered."""
    if not pending:
        return False
    mine = [(buf, lo, hi, True) for buf, lo, hi in rec.writes] + \
           [(buf, lo, hi, False) for buf, lo, hi in rec.reads]
    for peer, buf, lo, hi, write in pending:
        if peer != rec.unit:
            continue
        for mbuf, mlo, mhi, mwrite in mine:
            if mbuf == buf and (write or mwrite) and mlo <= hi and lo <= mhi:
                return True
    return False
