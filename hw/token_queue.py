"""A dependency-token queue (l2c, c2l, c2s, s2c): tokens carry no data, so it is a counter.

The producer strobes ``push`` after an instruction with the matching push flag retires;
the consumer waits for ``available`` and strobes ``pop`` before its instruction runs.
Pushing into a full queue or popping an empty one sets the sticky ``error`` (the fetch
unit's program-order checks keep every queue far from full: spec/isa.py MAX_TOKENS).
``clear`` (START) empties the queue and clears ``error``: no token of an earlier run, legal
or not, reaches the next one.
"""
from __future__ import annotations

from amaranth.hdl import Module, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from vtalab.spec.errors import ConfigError
from vtalab.spec.isa import TOKEN_QUEUE_DEPTH

TOKEN_DEPTH = TOKEN_QUEUE_DEPTH


class TokenQueue(wiring.Component):
    """Counts tokens pushed and not yet popped, up to ``depth``."""

    def __init__(self, depth: int = TOKEN_DEPTH):
        if not isinstance(depth, int) or depth < 1:
            raise ConfigError(f"token queue depth must be a positive integer, not {depth!r}")
        self.depth = depth
        super().__init__({
            "push": In(1),
            "pop": In(1),
            "clear": In(1),
            "available": Out(1),
            "level": Out(range(depth + 1)),
            "error": Out(1),
        })

    def elaborate(self, platform):
        m = Module()
        full = Signal()
        m.d.comb += [self.available.eq(self.level != 0), full.eq(self.level == self.depth)]
        do_push = self.push & ~full
        do_pop = self.pop & self.available
        with m.If(do_push & ~do_pop):
            m.d.sync += self.level.eq(self.level + 1)
        with m.Elif(do_pop & ~do_push):
            m.d.sync += self.level.eq(self.level - 1)
        # A pop of an empty queue is refused even when a push arrives in the same cycle.
        with m.If((self.push & full & ~do_pop) | (self.pop & ~self.available)):
            m.d.sync += self.error.eq(1)
        with m.If(self.clear):
            m.d.sync += [self.level.eq(0), self.error.eq(0)]
        return m
