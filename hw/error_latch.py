"""A module's first illegal condition: its ErrorCode and the instruction it is about.

The load, compute and store modules count the instructions they take (``taken``); when
``error`` strobes with a ``code`` and nothing is latched yet, the latch keeps the code and
the index of the instruction among the module's own (``count - 1 - lag``: ``lag``
instructions back, for a condition found after the module moved on, as the exec pipe's
index check is). Software maps that index to the program's (runtime/hw_errors.py).
``clear`` (START) forgets both. The fetch unit keeps its own, with program indices.
"""
from __future__ import annotations

from amaranth.hdl import Module
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from vtalab.spec.regs import ERROR_CODE_BITS

INDEX_BITS = 32
#: how many instructions back an error may be reported (the width of ``lag``)
LAG_BITS = 4


class ErrorLatch(wiring.Component):
    def __init__(self):
        super().__init__({
            "clear": In(1), "taken": In(1),
            "error": In(1), "code": In(ERROR_CODE_BITS), "lag": In(LAG_BITS),
            "count": Out(INDEX_BITS),          # instructions taken since START
            "latched": Out(ERROR_CODE_BITS), "index": Out(INDEX_BITS),
        })

    def elaborate(self, platform):
        m = Module()
        with m.If(self.clear):
            m.d.sync += self.count.eq(0)
        with m.Elif(self.taken):
            m.d.sync += self.count.eq(self.count + 1)
        with m.If(self.clear):
            m.d.sync += [self.latched.eq(0), self.index.eq(0)]
        with m.Elif(self.error & (self.latched == 0)):
            m.d.sync += [self.latched.eq(self.code),
                         self.index.eq(self.count - 1 - self.lag)]
        return m
