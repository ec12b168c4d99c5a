"""The ALU MUL in beats: ``Config.alu_mul_lanes`` multipliers take a row of batch*block_out
elements over ``Config.mul_beats`` cycles.

A MUL micro-op whose rows are ready (no ALU stall, hw/pipe_hazard.py) stays in stage 2
for ``mul_beats - 1`` cycles more. Its SRAM reads are made every cycle from the held
indices, so each cycle sends its rows down the pipe: first as bubbles (invalid, writing
nothing), then with the micro-op itself, numbered 0..mul_beats-1 by a beat index that
moves with them. Multiplier ``i`` takes lane ``i * mul_beats + beat`` in stage 5 (its
lanes are neighbours), and each lane's product register loads in stage 7 only on its
own beat (hw/alu_stages.py), so the micro-op, the last beat, finds every product in
stage 8 as with one multiplier per lane. Nothing behind it moves meanwhile: the pipe
stays in order, and a MUL micro-op costs ``mul_beats`` issue cycles
(spec/timing.py ``micro_op_cycles``). With one beat (the default) none of this exists.
"""
from __future__ import annotations

from amaranth.hdl import Mux, Signal

from vtalab.spec import Config
from vtalab.spec.isa import AluOp


def is_mul(op):
    return op.is_alu & (op.alu_opcode == AluOp.MUL)


class MulBeats:
    """The beat count of the micro-op in stage 2 and the hold it adds to the ALU stall.

    ``stall`` is the exec pipe's stall register (stage 2 and the front hold while it is
    set); :meth:`next_stall` takes the hazard part of next cycle's value and returns the
    whole. ``beat[s]`` is the beat index in stage ``s`` (3..7) and ``train[s]`` marks a
    bubble carrying a beat's rows there (the cycle simulators' enables need it)."""

    def __init__(self, m, cfg: Config, stall):
        self.m, self.cfg, self.stall = m, cfg, stall
        self.count = cfg.mul_beats
        self.beat, self.train = {}, {}

    def next_stall(self, hazard_next, valid1d, op1d, valid2, op2):
        if self.count == 1:
            return hazard_next
        m, stall, last = self.m, self.stall, self.count - 1
        hazard = Signal(name="hazard_stall")          # the hazard part of ``stall``
        beat2 = Signal(range(self.count), name="mul_beat2")
        beat_next = Signal.like(beat2, name="mul_beat_next")
        # stage 2 holds without a hazard only for its MUL's beats: each such cycle is one
        m.d.comb += beat_next.eq(Mux(stall, beat2 + ~hazard, 0))
        m.d.sync += [hazard.eq(hazard_next), beat2.eq(beat_next)]
        staying = valid2 & is_mul(op2) & (beat_next != last)
        incoming = valid1d & is_mul(op1d)
        self._stages(beat2, stall & ~hazard)
        return hazard_next | Mux(stall, staying, incoming)

    def _stages(self, beat2, train2) -> None:
        """The beat index and the train bit of stages 3..9, one register each stage."""
        beat, train = beat2, train2
        for s in range(3, 10):
            beat = _delayed(self.m, beat, f"mul_beat{s}")
            train = _delayed(self.m, train, f"mul_train{s}")
            self.beat[s], self.train[s] = beat, train


def _delayed(m, value, name):
    reg = Signal.like(value, name=name)
    m.d.sync += reg.eq(value)
    return reg
