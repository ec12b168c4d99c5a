"""Dependency-token insertion from the SRAM and DRAM hazards between the three modules.

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

DRAM: a load of bytes that an earlier store of the same stream wrote (a joined program:
one layer's output is the next one's input) must wait until that store has landed (the
store module pushes s2c only once the bus acknowledged every write). A compute-module load
pops that store's token itself. The load module has no queue from the store module: it
pops the token of the earliest compute instruction already ordered after the store (the
store's bytes were usually written long before: a layer's first input rows are the
previous layer's first output rows, whose store compute has waited for since), or else of
a compute no-op inserted just before the load that pops the store's token (TVM's VTA
runtime relays the same way).
"""
from __future__ import annotations

from vtalab.runtime.builder import noop
from vtalab.spec import Config
from vtalab.spec.isa import FinishInsn

from ..stream import Record, Stream

# (popping unit, pushing unit) -> (pop flag, push flag)
_EDGES = {
    ("compute", "load"): ("pop_prev", "push_next"),
    ("load", "compute"): ("pop_next", "push_prev"),
    ("store", "compute"): ("pop_prev", "push_next"),
    ("compute", "store"): ("pop_next", "push_prev"),
}
_CROSS = {"inp": ("load", "compute"), "wgt": ("load", "compute"), "out": ("compute", "store")}


class _Tokens:
    """The stream being rebuilt, with what is not yet ordered across modules."""

    def __init__(self, cfg: Config, bases: dict):
        self.cfg, self.bases = cfg, bases
        self.out: list = []
        self.pending: dict = {unit: [] for unit in ("load", "compute", "store")}
        self.last: dict = {}
        self.stores: list = []          # (index, DRAM buffer, first byte, last byte)
        self.seen: dict = {}            # unit -> latest store ordered before its next insn
        self.known: list = []           # per placed record: the latest store ordered before it
        self.popped: dict = {}          # (unit, other) -> index it last popped a token of

    def unordered_store(self, rec: Record) -> int | None:
        """Index of the latest store overlapping the DRAM bytes ``rec`` loads that is not
        yet ordered before ``rec``."""
        span = rec.dram_span(self.cfg, self.bases)
        if span is None or span[3]:
            return None
        buf, lo, hi, _ = span
        seen = self.seen.get(rec.unit, -1)
        return max((i for i, b, slo, shi in self.stores
                    if b == buf and i > seen and slo <= hi and lo <= shi), default=None)

    def compute_after(self, store: int) -> int | None:
        """The earliest compute instruction the load module may still pop a token of that
        is ordered after ``store`` (it popped that store's token, or a later one's)."""
        start = self.popped.get(("load", "compute"), -1) + 1
        for c in range(start, len(self.out)):
            if self.out[c].unit == "compute" and self.known[c] >= store:
                return c
        return None

    def place(self, rec: Record, after: dict | None = None) -> int:
        """Append ``rec``; it pops a token from each neighbour whose latest conflicting
        instruction (or the one ``after`` names for that neighbour, if later) is
        unordered."""
        i = len(self.out)
        self.out.append(rec)
        is_finish = isinstance(rec.insn, FinishInsn)
        for other in _neighbours(rec.unit):
            if is_finish and self.pending[other]:
                at = self.last[other]
            else:
                at = _latest_conflict(rec, self.pending[other])
            forced = (after or {}).get(other)
            if forced is not None and not self._ordered(rec.unit, other, forced):
                at = forced if at is None else max(at, forced)
            if at is not None:
                self._edge(rec, other, at)
        for kind, ranges in (("w", rec.writes), ("r", rec.reads)):
            for buf, lo, hi in ranges:
                if buf in _CROSS:
                    self.pending[rec.unit].append((i, _peer(rec.unit, buf), buf, lo, hi,
                                                   kind == "w"))
        span = rec.dram_span(self.cfg, self.bases)
        if span is not None and span[3]:
            self.stores.append((i, *span[:3]))
            self.seen["store"] = i
        self.known.append(self.seen.get(rec.unit, -1))
        self.last[rec.unit] = i
        return i

    def _ordered(self, unit: str, other: str, at: int) -> bool:
        """Whether store ``at`` is already ordered before ``unit``'s next instruction."""
        return other == "store" and at <= self.seen.get(unit, -1)

    def _edge(self, rec: Record, other: str, at: int) -> None:
        pop, push = _EDGES[(rec.unit, other)]
        self.out[at].set_flags(**{push: True})
        rec.set_flags(**{pop: True})
        self.pending[other] = [p for p in self.pending[other]
                               if p[1] != rec.unit or p[0] > at]
        self.seen[rec.unit] = max(self.seen.get(rec.unit, -1), self.known[at])
        self.popped[(rec.unit, other)] = at


def insert_deps(stream: Stream, cfg: Config) -> Stream:
    recs = stream.records
    if not recs or not isinstance(recs[-1].insn, FinishInsn):
        recs.append(Record(FinishInsn(), "compute"))
    tokens = _Tokens(cfg, stream.dram_bases)
    for rec in recs:
        store = tokens.unordered_store(rec)
        if store is None:
            tokens.place(rec)
        elif rec.unit == "compute":
            tokens.place(rec, {"store": store})
        else:
            via = tokens.compute_after(store)
            if via is None:
                via = tokens.place(Record(noop("compute"), "compute"), {"store": store})
            tokens.place(rec, {"compute": via})
    stream.records = tokens.out
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
