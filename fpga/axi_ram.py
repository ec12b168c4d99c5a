"""On-chip DRAM for boards without a DDR port: an AXI4 slave on one block RAM, plus a host port.

The core's AXI master (INCR bursts of full beats) reads and writes it at one beat per
cycle; the host bridge reads and writes 32-bit words through ``host`` when the AXI side is
idle. Byte addresses wrap modulo the size: the driver keeps every buffer inside it.
One read and one write port in total, so it maps to simple dual-port block RAM.
"""
from __future__ import annotations

from amaranth.hdl import Cat, Module, Mux, Signal, unsigned
from amaranth.lib import memory, wiring
from amaranth.lib.wiring import In, Out

from vtalab.hw.interfaces import AxiSignature
from vtalab.hw.sram import COLLISION_ATTR

from .errors import FpgaError


class HostPortSignature(wiring.Signature):
    """32-bit word access from the initiator's side: hold ``valid`` until ``done``."""

    def __init__(self):
        super().__init__({
            "valid": Out(1), "write": Out(1), "addr": Out(32), "wdata": Out(32),
            "done": In(1), "rdata": In(32),
        })


class AxiRam(wiring.Component):
    def __init__(self, bus_bits: int, nbytes: int):
        words = nbytes * 8 // bus_bits
        if words < 2 or words & (words - 1):
            raise FpgaError(f"on-chip DRAM size must be a power-of-two number of "
                            f"{bus_bits // 8}-byte words, not {nbytes} bytes")
        self.bus_bits, self.nbytes, self.words = bus_bits, nbytes, words
        self.lane_bits = (bus_bits // 8).bit_length() - 1      # byte offset bits in a word
        self.index_bits = words.bit_length() - 1
        super().__init__({"axi": In(AxiSignature(bus_bits)), "host": In(HostPortSignature())})

    def _index(self, byte_addr):
        return byte_addr[self.lane_bits:self.lane_bits + self.index_bits]

    def elaborate(self, platform):
        m = Module()
        # A read of the word being written in the same cycle may return anything (the
        # token protocol keeps a program's DMA reads and writes of one buffer apart, and
        # host accesses wait for an idle bus): no bypass between the block RAMs and rdata_q,
        # so the board build moves rdata_q into them (fpga/bram_outreg.py).
        m.submodules.mem = mem = memory.Memory(shape=unsigned(self.bus_bits), depth=self.words,
                                               init=[], attrs={COLLISION_ATTR: "undefined"})
        rport = mem.read_port()
        wport = mem.write_port(granularity=8)
        host_read_done = self._read_side(m, rport)
        host_write_done = self._write_side(m, wport)
        m.d.comb += self.host.done.eq(host_read_done | host_write_done)
        return m

    def _read_side(self, m, rport):
        """Reads go through two registers: the block RAM's output (slow on the ECP5: 5.8 ns
        clock-to-out at speed grade 6) feeds only ``rdata_q``, which drives RDATA and the
        host's read data. The pipeline (RAM output, then rdata_q) advances together. The
        read address is always the ``addr`` register (a host read loads it first): no
        multiplexer between it and the address pins of every block RAM of the memory."""
        axi, host = self.axi, self.host
        active, fetched, pending = Signal(), Signal(), Signal()
        last_fetched, last_pending = Signal(), Signal()
        addr, left = Signal(self.index_bits), Signal(8)
        rdata_q = Signal(self.bus_bits, reset_less=True)
        advance = ~pending | axi.rready
        busy = active | fetched | pending
        host_wait = Signal(3)            # a host read: address, RAM read, rdata_q, done
        m.d.comb += [axi.arready.eq(~busy & (host_wait == 0)), axi.rvalid.eq(pending),
                     axi.rdata.eq(rdata_q), axi.rlast.eq(last_pending), axi.rresp.eq(0)]
        with m.If(axi.arvalid & axi.arready):
            m.d.sync += [active.eq(1), addr.eq(self._index(axi.araddr)), left.eq(axi.arlen)]
        with m.If(advance):
            m.d.sync += [pending.eq(fetched), last_pending.eq(last_fetched),
                         fetched.eq(active), last_fetched.eq(active & (left == 0))]
            with m.If(active):
                m.d.sync += [addr.eq(addr + 1), left.eq(left - 1)]
                with m.If(left == 0):
                    m.d.sync += active.eq(0)
        # Host reads use the port while no burst runs; data is there three cycles later.
        lane = Signal(max(1, self.lane_bits - 2))
        free = ~busy & ~axi.arvalid
        start = host.valid & ~host.write & free & (host_wait == 0)
        m.d.comb += [rport.en.eq(advance | host_wait[0]), rport.addr.eq(addr)]
        m.d.sync += host_wait.eq(Cat(start, host_wait[:2]))
        with m.If(advance | host_wait[1]):              # one enable: a plain register
            m.d.sync += rdata_q.eq(rport.data)
        with m.If(start):
            m.d.sync += [lane.eq(host.addr[2:self.lane_bits]),
                         addr.eq(self._index(host.addr))]
        words = [rdata_q[32 * k:32 * (k + 1)] for k in range(self.bus_bits // 32)]
        m.d.comb += host.rdata.eq(_select(words, lane))
        return host_wait[2]

    def _write_side(self, m, wport):
        axi, host = self.axi, self.host
        active, bpending = Signal(), Signal()
        addr = Signal(self.index_bits)
        m.d.comb += [axi.awready.eq(~active & ~bpending), axi.wready.eq(active),
                     axi.bvalid.eq(bpending), axi.bresp.eq(0)]
        with m.If(axi.awvalid & axi.awready):
            m.d.sync += [active.eq(1), addr.eq(self._index(axi.awaddr))]
        with m.If(axi.wvalid & axi.wready):
            m.d.sync += addr.eq(addr + 1)
            with m.If(axi.wlast):
                m.d.sync += [active.eq(0), bpending.eq(1)]
        with m.If(axi.bvalid & axi.bready):
            m.d.sync += bpending.eq(0)
        host_write = host.valid & host.write & ~active & ~axi.awvalid
        lanes = self.bus_bits // 32
        host_strb = Signal(self.bus_bits // 8)
        for k in range(lanes):
            hit = host.addr[2:self.lane_bits] == k if lanes > 1 else 1
            m.d.comb += host_strb[4 * k:4 * (k + 1)].eq(Mux(hit, 0b1111, 0))
        # The write lands a cycle later, from registers beside the block RAMs (their byte
        # enables, address and data pins take no multiplexer): a write burst's B response
        # and a host write's done come no earlier than that cycle, so no read issued after
        # either can miss it.
        m.d.sync += [
            wport.addr.eq(Mux(active, addr, self._index(host.addr))),
            wport.data.eq(Mux(active, axi.wdata, _replicate(host.wdata, lanes))),
            wport.en.eq(Mux(active, Mux(axi.wvalid, axi.wstrb, 0),
                            Mux(host_write, host_strb, 0))),
        ]
        return host_write


def _replicate(word, count):
    return Cat(*([word] * count))


def _select(words, index):
    from amaranth.hdl import Array
    return Array(words)[index] if len(words) > 1 else words[0]
