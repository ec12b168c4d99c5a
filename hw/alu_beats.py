"""ALU micro-ops in beats: fewer ALU lanes (``Config.alu_lanes``) or MUL multipliers
(``Config.alu_mul_lanes``) than the batch*block_out elements of a row, each beat a cycle.

An ALU micro-op whose rows are ready (no ALU stall, hw/pipe_hazard.py) stays in stage 2
for ``beats - 1`` cycles more (``Config.alu_beats``, or ``Config.mul_beats`` for a MUL).
Its SRAM reads are made every cycle from the held indices, so each cycle sends its rows
down the pipe: first as bubbles (invalid, writing nothing), then with the micro-op
itself, numbered 0..beats-1 by a beat index that moves with them. ALU lane ``u`` takes
element ``u * alu_beats + beat % alu_beats`` in stage 4 and multiplier ``i`` the ALU lane
holding element ``i * mul_beats + beat`` in stage 5 (neighbouring elements share a
lane); each element's result register loads only on its own beat (hw/alu_stages.py), so
the micro-op, the last beat, finds the whole row there as with a lane per element.
Nothing behind it moves meanwhile: the pipe stays in order, and the micro-op costs
``beats`` issue cycles (spec/timing.py ``micro_op_cycles``). With one beat for every
ALU opcode (the default) none of this exists.
"""
from __future__ import annotations

from amaranth.hdl import Const, Mux, Signal

from vtalab.spec import Config
from vtalab.spec.isa import AluOp

from .forward import ACCUMULATE_STAGE
from .registers import enabled_register


def is_mul(op):
    return op.is_alu & (op.alu_opcode == AluOp.MUL)


class AluBeats:
    """The beat count of the micro-op in stage 2 and the hold it adds to the ALU stall.

    ``stall`` is the exec pipe's stall register (stage 2 and the front hold while it is
    set); :meth:`next_stall` takes the hazard part of next cycle's value and returns the
    whole. ``beat[s]`` is the beat index in stage ``s`` (3..9, the ALU's stages) and
    ``train[s]`` marks a bubble carrying a beat's rows there (the cycle simulators'
    enables need it)."""

    def __init__(self, m, cfg: Config, stall):
        self.m, self.cfg, self.stall = m, cfg, stall
        self.alu, self.mul = cfg.alu_beats, cfg.mul_beats
        self.beat, self.train = {}, {}

    def _needs_beats(self, op):
        """The micro-op with ``op`` takes more than one beat (called with mul_beats > 1:
        every ALU micro-op when alu_beats > 1 too, else MUL only)."""
        return op.is_alu if self.alu > 1 else is_mul(op)

    def next_stall(self, hazard_next, valid1d, op1d, valid2, op2):
        if self.mul == 1:                            # then alu_beats is 1 too
            return hazard_next
        m, stall = self.m, self.stall
        hazard = Signal(name="hazard_stall")          # the hazard part of ``stall``
        beat2 = Signal(range(self.mul), name="alu_beat2")
        beat_next = Signal.like(beat2, name="alu_beat_next")
        # stage 2 holds without a hazard only for its micro-op's beats: each such cycle is one
        m.d.comb += beat_next.eq(Mux(stall, beat2 + ~hazard, 0))
        m.d.sync += [hazard.eq(hazard_next), beat2.eq(beat_next)]
        last = Mux(is_mul(op2), self.mul - 1, self.alu - 1)
        staying = valid2 & self._needs_beats(op2) & (beat_next != last)
        incoming = valid1d & self._needs_beats(op1d)
        self._stages(beat2, stall & ~hazard)
        return hazard_next | Mux(stall, staying, incoming)

    def _stages(self, beat2, train2) -> None:
        """The beat index and the train bit of stages 3 to the accumulate stage's front,
        one register each stage."""
        beat, train = beat2, train2
        for s in range(3, ACCUMULATE_STAGE):
            beat = enabled_register(self.m, beat, Const(1), f"alu_beat{s}")
            train = enabled_register(self.m, train, Const(1), f"alu_train{s}")
            self.beat[s], self.train[s] = beat, train
