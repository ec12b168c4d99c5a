"""Virtual-thread interleaving: a ``vthread`` loop becomes n interleaved copies of its body.

Every SRAM buffer allocated inside the loop gets one copy per thread (entry offset
``t * entries``). The body is then expanded statement by statement: a loop whose body
mixes DMA and compute keeps running once, with the threads interleaved inside it; a
statement of one kind (a DMA, a GEMM/ALU block) is emitted once per thread. Consecutive
statements that all run on the load module (the inp and wgt copies of one reduction step)
are emitted as one group per thread, so that thread 0's whole step is loaded before
thread 1's: thread 0's GEMMs then wait only for thread 0's loads; likewise consecutive
compute statements. The result is the
classic double-buffered pipeline: thread 1 loads while thread 0 computes.
"""
from __future__ import annotations

from vtalab.spec import Config

from ...ir.expr import Const, INT32
from ...ir.stmt import Allocate, Attr, Buffer, For, Seq, SRAM_SCOPES, seq
from ...ir.visit import rebuild, substitute, walk
from ..intrin import entries
from ..nodes import VtaStmt


def inject_vthread(func, cfg: Config):
    def fn(node):
        if isinstance(node, For) and node.kind == "vthread":
            return _expand_loop(node, cfg)
        return None

    return func.with_body(rebuild(func.body, fn))


def _expand_loop(loop: For, cfg: Config):
    n, vt = loop.extent, loop.var
    copies = {}
    for node in walk(loop.body):
        if isinstance(node, Allocate) and node.buffer.scope in SRAM_SCOPES:
            b = node.buffer
            copies[b] = (Buffer(b.name, (n,) + b.shape, b.dtype, b.scope), entries(b, cfg))

    def remap(buf, index):
        if buf in copies:
            new, size = copies[buf]
            return new, index + vt * size
        return buf, index

    def replicate(node):
        if isinstance(node, VtaStmt):
            return node.map_sram(remap)
        if isinstance(node, Allocate) and node.buffer in copies:
            return Allocate(copies[node.buffer][0], node.body, node.base)
        return None

    body = rebuild(loop.body, replicate)
    return _expand(body, vt, n)


def _kinds(node) -> set:
    return {(n.unit, getattr(n, "direction", "")) for n in walk(node) if isinstance(n, VtaStmt)}


def _expand(node, vt, n):
    if isinstance(node, Seq):
        lifted = _lift_alloc(node)
        if lifted is not None:
            return _expand(lifted, vt, n)
        return seq(*[_expand(s[0], vt, n) if len(s) == 1 else _per_thread(seq(*s), vt, n)
                     for s in _unit_runs(node.stmts)])
    if isinstance(node, Allocate):
        return Allocate(node.buffer, _expand(node.body, vt, n), node.base)
    if isinstance(node, Attr):
        return Attr(node.key, node.value, _expand(node.body, vt, n))
    if isinstance(node, For) and len(_kinds(node)) > 1:
        return For(node.var, node.extent, _expand(node.body, vt, n), node.kind)
    return _per_thread(node, vt, n)


def _lift_alloc(node: Seq):
    """``seq(A, alloc b {B})`` as ``alloc b {seq(A, B)}`` where A allocates nothing (the
    peak SRAM use is unchanged), so that A and B's loads form one run; None otherwise."""
    *head, last = node.stmts
    if not isinstance(last, Allocate) or \
            any(isinstance(x, Allocate) for h in head for x in walk(h)):
        return None
    return Allocate(last.buffer, seq(*head, last.body), last.base)


def _per_thread(node, vt, n):
    return seq(*[substitute(node, {vt: Const(t, INT32)}) for t in range(n)])


def _unit_runs(stmts) -> list[list]:
    """Statements split into runs: maximal runs of load-module-only statements, maximal
    runs of compute-only ones (a reduction step split in two by overwrite_first: thread
    0's whole step before thread 1's, so thread 0's buffers free up a step sooner), and
    every other statement on its own."""
    runs, current, unit = [], [], None
    for stmt in stmts:
        units = {u for u, _ in _kinds(stmt)}
        one = next(iter(units)) if len(units) == 1 and units <= {"load", "compute"} else None
        if one is not None and one == unit:
            current.append(stmt)
            continue
        if current:
            runs.append(current)
        current, unit = [stmt], one
        if one is None:
            runs.append(current)
            current = []
    if current:
        runs.append(current)
    return runs
