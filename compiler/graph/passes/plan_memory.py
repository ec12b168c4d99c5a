"""Static memory planning: liveness-based reuse of DRAM buffers for activations.

Every non-constant value gets an aligned byte range in one activation arena. A value is live
from the node that defines it to the last node that reads it (graph inputs and outputs for
the whole run); buffers whose values are dead are reused first-fit, never while a node still
reads them (no in-place writes). `graph.meta["memory_plan"]` holds the `MemoryPlan`."""
from __future__ import annotations

from dataclasses import dataclass

from ..ir import Graph
from .rewrite import PassContext


@dataclass(frozen=True)
class Buffer:
    value: str
    offset: int
    nbytes: int
    first: int  # index of the defining node (-1: graph input)
    last: int   # index of the last reader (len(nodes): graph output)


@dataclass(frozen=True)
class MemoryPlan:
    buffers: tuple[Buffer, ...]
    arena_bytes: int      # activation arena with reuse
    naive_bytes: int      # the same values without reuse
    constant_bytes: int   # weights, biases, other constants

    @property
    def dram_bytes(self) -> int:
        return self.arena_bytes + self.constant_bytes

    def buffer(self, value: str) -> Buffer:
        return next(b for b in self.buffers if b.value == value)

    def report(self) -> str:
        kib = lambda n: f"{n / 1024:,.1f} KiB"
        saved = 1 - self.arena_bytes / self.naive_bytes if self.naive_bytes else 0.0
        return (f"DRAM footprint {kib(self.dram_bytes)}: activations {kib(self.arena_bytes)} "
                f"in {len(self.buffers)} values (without reuse {kib(self.naive_bytes)}, "
                f"{saved:.0%} saved), constants {kib(self.constant_bytes)}")


def _align(n: int, alignment: int) -> int:
    return -(-n // alignment) * alignment


def liveness(graph: Graph) -> dict[str, tuple[int, int]]:
    end = len(graph.nodes)
    live = {v: (-1, end) for v in graph.inputs}
    for i, node in enumerate(graph.nodes):
        for v in node.outputs:
            live[v] = (i, i)
        for v in node.inputs:
            if v in live:
                live[v] = (live[v][0], max(live[v][1], i))
    for v in graph.outputs:
        if v in live:  # an output that is a constant needs no arena buffer
            live[v] = (live[v][0], end)
    return live


def plan_memory(graph: Graph, ctx: PassContext) -> Graph:
    from vtalab.runtime.device import default_alignment
    alignment = ctx.alignment or default_alignment(ctx.config)
    live = liveness(graph)
    order = sorted(live, key=lambda v: (live[v][0], -graph.types[v].nbytes))
    placed: list[Buffer] = []
    for value in order:
        first, last = live[value]
        size = _align(max(graph.types[value].nbytes, 1), alignment)
        busy = sorted((b.offset, b.offset + _align(b.nbytes, alignment)) for b in placed
                      if not (b.last < first or last < b.first))
        offset = 0
        for lo, hi in busy:
            if offset + size <= lo:
                break
            offset = max(offset, hi)
        placed.append(Buffer(value, offset, graph.types[value].nbytes, first, last))
    arena = max((b.offset + _align(b.nbytes, alignment) for b in placed), default=0)
    naive = sum(_align(b.nbytes, alignment) for b in placed)
    constants = sum(a.nbytes for a in graph.constants.values())
    plan = MemoryPlan(tuple(placed), arena, naive, constants)
    return graph.with_meta(memory_plan=plan)
