"""A plain 8N1 UART (receiver and transmitter) for the host bridge of open-flow boards."""
from __future__ import annotations

from amaranth.hdl import Module, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from .errors import FpgaError


def baud_divisor(clk_hz: float, baud: int) -> int:
    divisor = round(clk_hz / baud)
    if divisor < 4:
        raise FpgaError(f"UART clock divisor must be at least 4, not {divisor} "
                        f"({clk_hz:g} Hz / {baud} baud)")
    return divisor


class UartRx(wiring.Component):
    """Samples ``rx`` mid-bit; ``valid`` pulses for one cycle with ``data``."""
    def __init__(self, divisor: int):
        self.divisor = divisor
        super().__init__({"rx": In(1, init=1), "data": Out(8), "valid": Out(1)})

    def elaborate(self, platform):
        m = Module()
        sync_rx = Signal(2, init=0b11)
        m.d.sync += sync_rx.eq(sync_rx << 1 | self.rx)
        rx = sync_rx[1]
        timer = Signal(range(self.divisor * 3 // 2 + 1))
        bit = Signal(range(9))
        shift = Signal(8)
        m.d.sync += self.valid.eq(0)
        with m.FSM():
            with m.State("IDLE"):
                with m.If(~rx):
                    m.d.sync += [timer.eq(self.divisor * 3 // 2 - 1), bit.eq(0)]
                    m.next = "DATA"
            with m.State("DATA"):
                with m.If(timer != 0):
                    m.d.sync += timer.eq(timer - 1)
                with m.Else():
                    m.d.sync += [shift.eq(rx << 7 | shift >> 1), bit.eq(bit + 1),
                                 timer.eq(self.divisor - 1)]
                    with m.If(bit == 7):
                        m.next = "STOP"
            with m.State("STOP"):
                with m.If(timer != 0):
                    m.d.sync += timer.eq(timer - 1)
                with m.Else():
                    m.d.sync += [self.data.eq(shift), self.valid.eq(rx)]
                    m.next = "IDLE"
        return m


class UartTx(wiring.Component):
    """Sends ``data`` when ``valid`` and ``ready`` are both high."""
    def __init__(self, divisor: int):
        self.divisor = divisor
        super().__init__({"tx": Out(1, init=1), "data": In(8), "valid": In(1),
                          "ready": Out(1)})

    def elaborate(self, platform):
        m = Module()
        timer = Signal(range(self.divisor))
        frame = Signal(10)
        bits = Signal(range(11))
        m.d.comb += self.ready.eq((bits == 0) & (timer == 0))
        with m.If(self.valid & self.ready):
            m.d.sync += [frame.eq(1 << 9 | self.data << 1), bits.eq(10)]
        with m.Elif(timer != 0):
            m.d.sync += timer.eq(timer - 1)
        with m.Elif(bits != 0):
            m.d.sync += [self.tx.eq(frame[0]), frame.eq(frame >> 1), bits.eq(bits - 1),
                         timer.eq(self.divisor - 1)]
        return m
