"""Register stages for valid/ready channels: a full-throughput register slice, and a small
LUT-RAM FIFO (plain, or with its head entry in an output register). The AXI master, the
DMA units, the fetch unit and the compute module cut their long paths with them."""
from __future__ import annotations

from amaranth.hdl import Elaboratable, Module, Mux, Signal
from amaranth.lib import fifo, memory

from vtalab.spec.errors import ConfigError


class RegisterSlice(Elaboratable):
    """A full-throughput register stage for a valid/ready channel: ``i_ready`` and the
    outputs come from registers, so neither side's logic reaches the other's (a second,
    skid register holds the beat accepted while the output stalls)."""

    def __init__(self, width: int):
        self.i_valid, self.i_ready, self.i_data = Signal(), Signal(), Signal(width)
        self.o_valid, self.o_ready, self.o_data = Signal(), Signal(), Signal(width)

    def elaborate(self, platform):
        m = Module()
        skid_valid, skid_data = Signal(), Signal.like(self.i_data)
        accept = self.i_valid & ~skid_valid
        m.d.comb += self.i_ready.eq(~skid_valid)
        with m.If(self.o_ready | ~self.o_valid):
            with m.If(skid_valid):
                m.d.sync += [self.o_data.eq(skid_data), self.o_valid.eq(1), skid_valid.eq(0)]
            with m.Else():
                m.d.sync += [self.o_data.eq(self.i_data), self.o_valid.eq(accept)]
        with m.Elif(accept):
            m.d.sync += [skid_data.eq(self.i_data), skid_valid.eq(1)]
        return m


class FifoSlice(Elaboratable):
    """A RegisterSlice's channel through a small LUT-RAM FIFO: ``i_ready`` and ``o_valid``
    from its level register, ``o_data`` the LUT RAM read at the read pointer. The consumer's
    ready only moves that pointer: no clock enable as wide as the data waits on it (a
    register slice's 65-bit enable behind a client's ready was a slowest path on the ECP5).

    With ``registered`` the head entry sits in an output register instead (``o_valid`` and
    ``o_data`` are flip-flops), loaded from the LUT RAM, or straight from the input when
    nothing waits there: for consumers spread far from the FIFO, which then see a
    flip-flop rather than the read pointer's route to the LUT RAMs plus the LUT RAM read
    (the ECP5's DMA response paths). The consumer's ready enables the output register, so
    it should come from registers; the LUT RAM's write enable does not wait on it. Same
    capacity and cycle behaviour as without (tests/hw/test_fifo_slice.py): the output
    register is empty only while nothing waits, so ``o_valid`` is "not empty" and
    ``i_ready`` "not full" (``depth`` - 1 waiting + the register) every cycle."""

    def __init__(self, width: int, depth: int = 4, registered: bool = False):
        if depth < 1 + registered:
            raise ConfigError(f"FifoSlice depth must be at least {1 + registered} "
                              f"{'with' if registered else 'without'} registered, not {depth}")
        self.depth, self.registered = depth, registered
        self.i_valid, self.i_ready, self.i_data = Signal(), Signal(), Signal(width)
        self.o_valid, self.o_ready, self.o_data = Signal(), Signal(), Signal(width)

    def elaborate(self, platform):
        m = Module()
        if not self.registered:
            m.submodules.queue = queue = fifo.SyncFIFO(width=len(self.i_data), depth=self.depth)
            m.d.comb += [queue.w_data.eq(self.i_data), queue.w_en.eq(self.i_valid),
                         self.i_ready.eq(queue.w_rdy), self.o_data.eq(queue.r_data),
                         self.o_valid.eq(queue.r_rdy), queue.r_en.eq(self.o_ready)]
            return m
        self._registered(m)
        return m

    def _registered(self, m: Module) -> None:
        """Every accepted entry is written to the LUT RAM (its write enable waits on the
        input side only); one that goes straight to the empty output register is read past
        at once. ``waiting`` counts the entries behind the output register."""
        rows = 1 << (self.depth - 1).bit_length()
        m.submodules.storage = storage = memory.Memory(shape=len(self.i_data), depth=rows,
                                                       init=[])
        write, read = storage.write_port(), storage.read_port(domain="comb")
        w_ptr, r_ptr = Signal(range(rows)), Signal(range(rows))
        waiting = Signal(range(self.depth))
        o_data = Signal.like(self.i_data, name="o_data_q")
        o_valid = Signal(name="o_valid_q")
        push, pop = Signal(), Signal()
        load = ~o_valid | self.o_ready
        m.d.comb += [self.o_data.eq(o_data), self.o_valid.eq(o_valid),
                     self.i_ready.eq(waiting != self.depth - 1),
                     push.eq(self.i_valid & self.i_ready),
                     pop.eq(load & ((waiting != 0) | push)),
                     write.addr.eq(w_ptr), write.data.eq(self.i_data), write.en.eq(push),
                     read.addr.eq(r_ptr)]
        with m.If(load):
            m.d.sync += [o_valid.eq(pop),
                         o_data.eq(Mux(waiting != 0, read.data, self.i_data))]
        m.d.sync += [w_ptr.eq(w_ptr + push), r_ptr.eq(r_ptr + pop),
                     waiting.eq(waiting + push - pop)]
