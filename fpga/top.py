"""The top level of an open-flow board: PLL, Core, on-chip DRAM and the UART host bridge.

    clk (board oscillator) -> EHXPLLL -> sync domain at cfg.clock_mhz
    UART <-> UartBridge --AXI4-Lite--> Core.ctrl
                        --host port--> AxiRam <--AXI4-- Core.axi
    led 0: done, led 1: PLL locked

The core's AXI master needs memory: boards without a DDR port get a block-RAM DRAM of
``Board.dram_bytes`` (64 KiB on ULX3S-85F), enough for instruction streams and tiles that
exercise the whole core; an SDRAM controller would lift that limit later.
"""
from __future__ import annotations

from amaranth.build import Attrs, Pins, Resource, ResourceError, Subsignal
from amaranth.hdl import ClockDomain, Elaboratable, Module
from amaranth.lib import io, wiring

from vtalab.hw.core import Core
from vtalab.spec import Config

from .axi_ram import AxiRam
from .boards import Board
from .pll import Ecp5Pll, pll_params
from .uart import baud_divisor
from .uart_bridge import UartBridge

# Boards whose platform has no UART get one on these connector pins (rx, tx).
EXTRA_UART = {"orangecrab-25f": ("io", 0, "0", "1")}


def add_board_resources(board: Board, platform) -> None:
    """Resources the board files lack (a UART on the OrangeCrab's Feather header)."""
    if board.name in EXTRA_UART:
        conn, number, rx, tx = EXTRA_UART[board.name]
        platform.add_resources([Resource(
            "uart", 0,
            Subsignal("rx", Pins(rx, dir="i", conn=(conn, number))),
            Subsignal("tx", Pins(tx, dir="o", conn=(conn, number))),
            Attrs(IO_TYPE="LVCMOS33"))])


class BoardTop(Elaboratable):
    def __init__(self, board: Board, cfg: Config):
        self.board, self.cfg = board, cfg
        self.pll = None

    def elaborate(self, platform):
        m = Module()
        cfg, board = self.cfg, self.board
        clk = platform.request(platform.default_clk, dir="-")
        m.submodules.clk_in = clk_in = io.Buffer("i", clk)
        in_mhz = platform.default_clk_frequency / 1e6
        params = pll_params(in_mhz, cfg.clock_mhz)
        # Asynchronous reset (released synchronously by the PLL's settle counter), on a
        # primary clock network (fpga/pll.py) unless the board says not (global_reset):
        # nextpnr still times its release at every LSR pin, and through the fabric the net
        # to thousands of them took ~10 ns on the 85F.
        m.domains.sync = ClockDomain("sync", async_reset=True)
        m.submodules.pll = self.pll = pll = Ecp5Pll(clk_in.i, params, "sync",
                                                     global_reset=board.global_reset)
        m.submodules.core = core = Core(cfg)
        m.submodules.dram = dram = AxiRam(cfg.bus_bits, board.dram_bytes)
        divisor = baud_divisor(params.out_mhz * 1e6, board.uart_baud)
        m.submodules.bridge = bridge = UartBridge(divisor)
        wiring.connect(m, core.axi, dram.axi)
        wiring.connect(m, bridge.ctrl, core.ctrl)
        wiring.connect(m, bridge.mem, dram.host)
        uart = platform.request("uart", 0, dir="-")
        m.submodules.uart_rx = uart_rx = io.Buffer("i", uart.rx)
        m.submodules.uart_tx = uart_tx = io.Buffer("o", uart.tx)
        m.d.comb += [bridge.rx.eq(uart_rx.i), uart_tx.o.eq(bridge.tx)]
        self._leds(m, platform, core, pll)
        return m

    @staticmethod
    def _leds(m, platform, core, pll):
        leds = []
        for index in range(2):
            try:
                led = platform.request("led", index, dir="-")
            except ResourceError:        # boards with an RGB LED only
                break
            m.submodules[f"led_{index}"] = buffer = io.Buffer("o", led)
            leds.append(buffer)
        for buffer, signal in zip(leds, (core.done, pll.locked)):
            m.d.comb += buffer.o.eq(signal)

