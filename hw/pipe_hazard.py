"""The exec pipe's ALU read-after-write stall, from registered hit bits.

An ALU micro-op reads its rows in stage 2 and cannot take forwarded values, so it waits
there while a micro-op in stages 3..W (W the write stage) writes its dst row, or its src
row when it has no immediate. Comparing its indices with every stage ahead in the cycle
before the stall register is loaded put an 11-bit compare, a 16-input OR and a mux in
front of that register (the ULX3S's critical path). Instead the comparisons are made one
stage earlier, against the positions the micro-ops ahead will have, and kept as hit
bits that move with the pipe:

- ``h1d``: for the micro-op in stage 1d, one bit per stage 2..W-1: "the micro-op there
  writes a row I read". Loaded, when the front moves, from the micro-op in 1c compared
  with stages 1d, 2, 3..W-2 (each moves one stage on with it); while the front holds,
  shifted like the pipe (stage 2 holds, stage 3 gets a bubble, the rest move on).
- ``h2``: the same for the micro-op in stage 2, stages 3..W: loaded from ``h1d`` when it
  moves in, shifted with a bubble into stage 3 while it waits.

The next stall is then an OR of registered bits: ``h1d``'s for the micro-op about to
enter stage 2, ``h2``'s shifted for the one waiting there.
"""
from __future__ import annotations

from amaranth.hdl import Cat, Const, Mux, Signal


def hit(op, idx, valid, row):
    """The micro-op with ``op`` and indices ``idx`` (dst, src, wgt) reads ``row``, which
    a valid micro-op writes."""
    dst, src = idx[0], idx[1][:len(idx[0])]
    return valid & ((row == dst) | (~op.use_imm & (row == src)))


def next_stall(m, stall, op1c, idx1c, ahead, valid1d, op1d):
    """Next cycle's stall register value. ``ahead``: (valid, dst row) of stages 1d, 2,
    3..W-2 now, the micro-ops the one in 1c will meet at stages 2..W-1 once in 1d;
    ``stall`` the stall register (the front and stage 2 hold while it is set)."""
    width = len(ahead)                           # stages 2..W-1 (h1d), 3..W (h2)
    h1d = Signal(width, name="hazard1d")
    h2 = Signal(width, name="hazard2")
    fresh = Cat(*(hit(op1c, idx1c, v, row) for v, row in ahead))
    # holding: stage 2 keeps its micro-op, a bubble enters stage 3, later ones move on
    h1d_held = Cat(h1d[0], Const(0, 1), h1d[1:width - 1])
    h2_held = Cat(Const(0, 1), h2[:width - 1])
    m.d.sync += [h1d.eq(Mux(stall, h1d_held, fresh)), h2.eq(Mux(stall, h2_held, h1d))]
    incoming = valid1d & op1d.is_alu & h1d.any()
    staying = h2[:width - 1].any()
    return Mux(stall, staying, incoming)
