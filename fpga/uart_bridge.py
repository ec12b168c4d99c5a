"""Host access over a serial line: control registers (AXI4-Lite master) and on-chip DRAM words.

Frames are 9 bytes, little-endian: a command byte, a 32-bit byte address, 32-bit data.
Every frame is answered with 4 bytes: the word read, or the write response code.

    'r' (0x72)  read the control register at addr       'w' (0x77)  write it
    'R' (0x52)  read the on-chip DRAM word at addr      'W' (0x57)  write it

Chosen over a soft CPU: it is small, needs no firmware, and lets the same Python driver run
a board from a laptop through ``fpga.driver.UartBus``.
"""
from __future__ import annotations

from amaranth.hdl import Cat, Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from vtalab.hw.interfaces import AxiLiteSignature
from vtalab.spec import regs as regmap

from .axi_ram import HostPortSignature
from .uart import UartRx, UartTx

FRAME_BYTES = 9
REPLY_BYTES = 4
CMD_REG_READ, CMD_REG_WRITE = ord("r"), ord("w")
CMD_MEM_READ, CMD_MEM_WRITE = ord("R"), ord("W")


class UartBridge(wiring.Component):
    def __init__(self, divisor: int):
        self.divisor = divisor
        super().__init__({
            "rx": In(1, init=1), "tx": Out(1, init=1),
            "ctrl": Out(AxiLiteSignature(regmap.ADDR_BITS)),
            "mem": Out(HostPortSignature()),
        })

    def elaborate(self, platform):
        m = Module()
        m.submodules.urx = urx = UartRx(self.divisor)
        m.submodules.utx = utx = UartTx(self.divisor)
        m.d.comb += [urx.rx.eq(self.rx), self.tx.eq(utx.tx)]
        frame = Signal(8 * FRAME_BYTES)
        count = Signal(range(FRAME_BYTES + 1))
        reply, result = Signal(32), Signal(32)
        # the address and data copied every cycle (no enable): the copies go beside the
        # registers and DRAM they address, the shift register stays beside the receiver
        # (its enable reached 72 flip-flops across the die; the copy is complete from
        # DECODE on, a cycle before EXEC reads it)
        fields = Signal.like(frame[8:])
        m.d.sync += fields.eq(frame[8:])
        cmd, addr, wdata = frame[:8], fields[:32], fields[32:]
        ctrl, mem = self.ctrl, self.mem
        aw_done, w_done = Signal(), Signal()
        kind = {name: Signal(name=f"is_{name}") for name in _COMMANDS}
        m.d.comb += [ctrl.awaddr.eq(addr), ctrl.araddr.eq(addr), ctrl.wdata.eq(wdata),
                     ctrl.wstrb.eq(0b1111), mem.addr.eq(addr), mem.wdata.eq(wdata),
                     utx.data.eq(reply[:8])]
        with m.FSM():
            with m.State("RECV"):
                with m.If(urx.valid):
                    m.d.sync += [frame.eq(Cat(frame[8:], urx.data)), count.eq(count + 1)]
                    with m.If(count == FRAME_BYTES - 1):
                        m.d.sync += [count.eq(0), aw_done.eq(0), w_done.eq(0)]
                        m.next = "DECODE"
            with m.State("DECODE"):
                # the command decoded into flags: flip-flops in front of EXEC's enables
                for name, codes in _COMMANDS.items():
                    m.d.sync += kind[name].eq(_any_of(cmd, codes))
                m.next = "EXEC"
            with m.State("EXEC"):
                self._execute(m, cmd, kind, aw_done, w_done)
            with m.State("RELAY"):
                # the result crosses the die (the core's registers, the on-chip DRAM) in
                # two hops: into ``result`` where it is produced, then into ``reply``
                # beside the transmitter (one 8.5 ns route was the ULX3S's slowest path).
                # ``result`` loads every cycle: an enable made of the far handshakes
                # reached its 32 flip-flops in 10.2 ns on the 1x16x8
                m.d.sync += reply.eq(result)
                m.next = "REPLY"
            with m.State("REPLY"):
                m.d.comb += utx.valid.eq(1)
                with m.If(utx.ready):
                    m.d.sync += [reply.eq(reply >> 8), count.eq(count + 1)]
                    with m.If(count == REPLY_BYTES - 1):
                        m.d.sync += count.eq(0)
                        m.next = "RECV"
        m.d.sync += result.eq(
            Mux(kind["reg_read"], ctrl.rdata,
                Mux(kind["mem"], Mux(cmd == CMD_MEM_WRITE, 0, mem.rdata),
                    Mux(kind["reg_write"], ctrl.bresp, 0xFFFFFFFF))))
        return m

    def _execute(self, m, cmd, kind, aw_done, w_done):
        """The command's handshakes; RELAY follows the cycle that completes it (``result``
        holds what that cycle returned)."""
        ctrl, mem = self.ctrl, self.mem
        with m.If(kind["reg_write"]):
            m.d.comb += [ctrl.awvalid.eq(~aw_done), ctrl.wvalid.eq(~w_done),
                         ctrl.bready.eq(aw_done & w_done)]
            with m.If(ctrl.awvalid & ctrl.awready):
                m.d.sync += aw_done.eq(1)
            with m.If(ctrl.wvalid & ctrl.wready):
                m.d.sync += w_done.eq(1)
            with m.If(ctrl.bvalid & ctrl.bready):
                m.next = "RELAY"
        with m.Elif(kind["reg_read"]):
            m.d.comb += [ctrl.arvalid.eq(~aw_done), ctrl.rready.eq(aw_done)]
            with m.If(ctrl.arvalid & ctrl.arready):
                m.d.sync += aw_done.eq(1)
            with m.If(ctrl.rvalid & ctrl.rready):
                m.next = "RELAY"
        with m.Elif(kind["mem"]):
            m.d.comb += [mem.valid.eq(1), mem.write.eq(cmd == CMD_MEM_WRITE)]
            with m.If(mem.done):
                m.next = "RELAY"
        with m.Else():
            m.next = "RELAY"


_COMMANDS = {"reg_write": (CMD_REG_WRITE,), "reg_read": (CMD_REG_READ,),
             "mem": (CMD_MEM_READ, CMD_MEM_WRITE)}


def _any_of(cmd, codes):
    hit = cmd == codes[0]
    for code in codes[1:]:
        hit = hit | (cmd == code)
    return hit
