"""Token-balance, deadlock and race verifier for an instruction stream.

Runs the three modules as the hardware may (each in order, gated only by tokens),
reports a deadlock naming the instruction and queue, leftover tokens at FINISH, and any
pair of conflicting SRAM or DRAM accesses (a store and a load or store of the same DRAM
buffer) in different modules that the tokens do not order.
"""
from __future__ import annotations

from collections import deque

from vtalab.spec import Config

from ...errors import VerifyError
from ..stream import Stream

_FLAG_QUEUES = {
    "load": {"pop_next": "c2l", "push_next": "l2c"},
    "compute": {"pop_prev": "l2c", "pop_next": "s2c", "push_prev": "c2l", "push_next": "c2s"},
    "store": {"pop_prev": "c2s", "push_prev": "s2c"},
}
UNITS = ("load", "compute", "store")


def verify_tokens(stream: Stream, cfg: Config) -> Stream:
    recs = stream.records
    order = {u: [i for i, r in enumerate(recs) if r.unit == u] for u in UNITS}
    heads = {u: 0 for u in UNITS}
    queues = {q: deque() for q in ("l2c", "c2l", "c2s", "s2c")}
    hb = [None] * len(recs)
    done = 0
    while done < len(recs):
        progressed = False
        for unit in UNITS:
            while heads[unit] < len(order[unit]):
                i = order[unit][heads[unit]]
                pops, pushes = _actions(unit, recs[i], i)
                if any(not queues[q] for q in pops):
                    break
                clock = dict(hb[order[unit][heads[unit] - 1]]) if heads[unit] else {}
                if heads[unit]:
                    clock[unit] = order[unit][heads[unit] - 1]
                for q in pops:
                    src, src_clock = queues[q].popleft()
                    for u, idx in src_clock.items():
                        clock[u] = max(clock.get(u, -1), idx)
                    clock[recs[src].unit] = max(clock.get(recs[src].unit, -1), src)
                hb[i] = clock
                for q in pushes:
                    queues[q].append((i, {**clock, unit: i}))
                heads[unit] += 1
                done += 1
                progressed = True
        if not progressed:
            raise VerifyError("token stream must not deadlock, but " + "; ".join(
                f"{u} instruction {order[u][heads[u]]} waits on "
                f"{_actions(u, recs[order[u][heads[u]]], 0)[0]}"
                for u in UNITS if heads[u] < len(order[u])))
    left = {q: len(v) for q, v in queues.items() if v}
    if left:
        raise VerifyError(f"tokens must all be consumed by FINISH, not left in {left}")
    _check_races(recs, hb, cfg, stream.dram_bases)
    return stream


def _actions(unit, rec, index):
    mapping = _FLAG_QUEUES[unit]
    pops, pushes = [], []
    for flag in ("pop_prev", "pop_next", "push_prev", "push_next"):
        if getattr(rec.insn, flag):
            if flag not in mapping:
                raise VerifyError(f"instruction {index} on the {unit} module must not set {flag}")
            (pops if flag.startswith("pop") else pushes).append(mapping[flag])
    return pops, pushes


def _check_races(recs, hb, cfg, bases) -> None:
    by_unit = {u: [] for u in UNITS}
    for i, rec in enumerate(recs):
        for other in UNITS:
            if other == rec.unit:
                continue
            covered = hb[i].get(other, -1)
            for j in reversed(by_unit[other]):
                if j <= covered:
                    break
                if _conflict(rec, recs[j], cfg, bases):
                    raise VerifyError(f"instruction {i} ({rec.unit}) must be ordered after "
                                      f"conflicting instruction {j} ({other}) by tokens, "
                                      f"but nothing orders them")
        by_unit[rec.unit].append(i)


def _conflict(a, b, cfg, bases) -> bool:
    sa, sb = a.dram_span(cfg, bases), b.dram_span(cfg, bases)
    if sa and sb and sa[0] == sb[0] and (sa[3] or sb[3]) and sa[1] <= sb[2] and sb[1] <= sa[2]:
        return True
    for wbuf, wlo, whi in a.writes:
        for buf, lo, hi in b.reads + b.writes:
            if buf == wbuf and wlo <= hi and lo <= whi:
                return True
    for wbuf, wlo, whi in b.writes:
        for buf, lo, hi in a.reads:
            if buf == wbuf and wlo <= hi and lo <= whi:
                return True
    return False
