"""On-chip DRAM for boards without a DDR port: an AXI4 slave on one block RAM, plus a host port.

The core's AXI master (INCR bursts of full beats) reads and writes it at one beat per
cycle; the host bridge reads and writes 32-bit words through ``host`` when the AXI side is
idle. Byte addresses wrap modulo the size: the driver keeps every buffer inside it.
One read and one write port in total, so it maps to simple dual-port block RAM.
"""
from __future__ import annotations

from amaranth.hdl import Cat, Module, Mux, Signal, unsigned
from amaranth.lib import fifo, memory, wiring
from amaranth.lib.wiring import In, Out

from vtalab.hw.interfaces import AxiSignature
from vtalab.hw.registers import register_copies, replicates
from vtalab.hw.sram import COLLISION_ATTR

from .errors import FpgaError


#: R-channel FIFO: room for the beats in flight (two stages) and the ones waiting, so a
#: burst streams at one beat per cycle while RREADY stays high
READ_FIFO_DEPTH = 8


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
        rports, wports = self._memories(m, platform)
        host_read_done = self._read_side(m, platform, rports)
        host_write_done = self._write_side(m, platform, wports)
        m.d.comb += self.host.done.eq(host_read_done | host_write_done)
        return m

    def _lanes(self, platform) -> int:
        """Byte-lane slices of the memory, each with its own copies of the read and write
        addresses (beside its block RAMs; one address register drove all 32 of a 64 KiB
        RAM): one per byte lane where flip-flops are copied (hw/registers.replicates:
        the open flow), else one memory."""
        return self.bus_bits // 8 if replicates(platform) else 1

    def _memories(self, m, platform):
        """(read ports, write ports): the memory, one per byte-lane slice."""
        lanes = self._lanes(platform)
        rports, wports = [], []
        for k in range(lanes):
            mem = memory.Memory(shape=unsigned(self.bus_bits // lanes), depth=self.words,
                                init=[], attrs={COLLISION_ATTR: "undefined"})
            m.submodules[f"mem_{k}" if lanes > 1 else "mem"] = mem
            rports.append(mem.read_port())
            wports.append(mem.write_port(granularity=8 if lanes == 1 else None))
        return rports, wports

    def _read_side(self, m, platform, rports):
        """Reads run free: every block RAM reads ``addr`` every cycle (no read enable), its
        output is registered in ``rdata_q`` every cycle (on ECP5 boards the DP16KD's own
        output register, fpga/bram_outreg.py), and a burst's beats enter a FIFO that drives
        the R channel. A beat is read only while the FIFO has room for it and the beats in
        the two stages ahead of it, so nothing before the FIFO waits on RREADY: no clock
        enable spans the memory's block RAMs or the data registers. The read address is
        always the ``addr`` register (a host read loads it first), or its copies."""
        axi, host = self.axi, self.host
        m.submodules.rfifo = rfifo = fifo.SyncFIFOBuffered(width=self.bus_bits + 1,
                                                           depth=READ_FIFO_DEPTH)
        active = Signal()
        addr, left = Signal(self.index_bits), Signal(8)
        rdata_q = Signal(self.bus_bits, reset_less=True)
        stages, lasts = Signal(2), Signal(2)   # beats in the RAM read / rdata_q stages
        host_wait = Signal(4)      # a host read: address, RAM read, rdata_q, host_q + done
        issue = self._issue(m, rfifo, active)
        m.d.comb += [rfifo.w_en.eq(stages[1]), rfifo.w_data.eq(Cat(rdata_q, lasts[1])),
                     axi.rvalid.eq(rfifo.r_rdy), axi.rdata.eq(rfifo.r_data[:self.bus_bits]),
                     axi.rlast.eq(rfifo.r_data[self.bus_bits]), axi.rresp.eq(0),
                     rfifo.r_en.eq(axi.rready)]
        m.d.comb += [port.en.eq(1) for port in rports]
        m.d.sync += [rdata_q.eq(Cat(*(port.data for port in rports))),
                     stages.eq(Cat(issue, stages[0])),
                     lasts.eq(Cat(issue & (left == 0), lasts[0]))]
        addr_next = Signal.like(addr)
        active_next, host_wait_next = Signal(), Signal.like(host_wait)
        m.d.comb += [addr_next.eq(addr), active_next.eq(active)]
        m.d.sync += [addr.eq(addr_next), active.eq(active_next), host_wait.eq(host_wait_next)]
        with m.If(axi.arvalid & axi.arready):
            m.d.sync += left.eq(axi.arlen)
            m.d.comb += [active_next.eq(1), addr_next.eq(self._index(axi.araddr))]
        with m.If(issue):
            m.d.sync += left.eq(left - 1)
            m.d.comb += addr_next.eq(addr + 1)
            with m.If(left == 0):
                m.d.comb += active_next.eq(0)
        # ARREADY = ~active & no host read, a flip-flop loaded with next cycle's value (the
        # master's burst splitter takes it: no LUT of this RAM's state on that path)
        arready = Signal(init=1, name="dram_arready")
        m.d.sync += arready.eq(~active_next & (host_wait_next == 0))
        m.d.comb += axi.arready.eq(arready)
        # Host reads use the port while no burst runs; done four cycles later.
        lane = Signal(max(1, self.lane_bits - 2))
        host_q = Signal(self.bus_bits, reset_less=True)
        start = (host.valid & ~host.write & ~active & (stages == 0) & ~axi.arvalid
                 & (host_wait == 0))
        m.d.comb += host_wait_next.eq(Cat(start, host_wait[:3]))
        with m.If(start):
            m.d.sync += lane.eq(host.addr[2:self.lane_bits])
            m.d.comb += addr_next.eq(self._index(host.addr))
        copies = register_copies(m, platform, addr, addr_next, len(rports), "dram_raddr")
        m.d.comb += [port.addr.eq(copy) for port, copy in zip(rports, copies)]
        with m.If(host_wait[2]):
            m.d.sync += host_q.eq(rdata_q)
        words = [host_q[32 * k:32 * (k + 1)] for k in range(self.bus_bits // 32)]
        m.d.comb += host.rdata.eq(_select(words, lane))
        return host_wait[3]

    def _issue(self, m, rfifo, active):
        """Whether a burst reads a beat this cycle: while the FIFO has room for it besides
        the beats in the two stages ahead of it. The room is a flip-flop: the FIFO's free
        places less the beats in flight are counted (a beat read takes one, a beat
        leaving the FIFO gives one back), and the flag loads the next count's test, so
        the read address and its copies are not behind an adder and a compare."""
        free = Signal(range(READ_FIFO_DEPTH + 1), init=READ_FIFO_DEPTH)
        free_next = Signal.like(free)
        room, issue = Signal(init=1), Signal()
        m.d.comb += [issue.eq(active & room),
                     free_next.eq(free - issue + (rfifo.r_en & rfifo.r_rdy))]
        m.d.sync += [free.eq(free_next), room.eq(free_next != 0)]
        return issue

    def _write_side(self, m, platform, ports):
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
        addr_q = Signal(self.index_bits, reset_less=True)
        data_q = Signal(self.bus_bits, reset_less=True)
        en_q = Signal(self.bus_bits // 8)
        addr_in = Mux(active, addr, self._index(host.addr))
        m.d.sync += [
            addr_q.eq(addr_in),
            data_q.eq(Mux(active, axi.wdata, _replicate(host.wdata, lanes))),
            en_q.eq(Mux(active, Mux(axi.wvalid, axi.wstrb, 0), Mux(host_write, host_strb, 0))),
        ]
        addrs = register_copies(m, platform, addr_q, addr_in, len(ports), "dram_waddr")
        bits, strobes = self.bus_bits // len(ports), len(en_q) // len(ports)
        for k, (port, port_addr) in enumerate(zip(ports, addrs)):
            m.d.comb += [port.addr.eq(port_addr), port.data.eq(data_q[k * bits:(k + 1) * bits]),
                         port.en.eq(en_q[k * strobes:(k + 1) * strobes])]
        return host_write


def _replicate(word, count):
    return Cat(*([word] * count))


def _select(words, index):
    from amaranth.hdl import Array
    return Array(words)[index] if len(words) > 1 else words[0]
