"""AXI4 master: splits DMA requests into legal INCR bursts and arbitrates the clients.

Read side: ``n_read`` clients (fetch, load, compute) share AR and R. Requests are granted
round-robin; each is cut into bursts of at most 256 beats that never cross 4 KiB. One tag
per issued burst names its client, and R beats go to that client in order (one ID, so
responses come back in issue order). Up to ``TAGS`` bursts are in flight, so a new burst is
issued while the previous one streams and the bus moves one beat per cycle. Each read
client's requests pass a register slice and its responses a small LUT-RAM FIFO
(hw/channel_slices.py); R beats reach those FIFOs through a dispatch register, paced by
per-client credits, so RREADY, the arbiter and no client's logic meet in one cycle (FPGA
timing; two cycles of latency, as with the R channel's own FIFO slice it replaced). The
FIFOs' registered form (head entry in an output register) measured slower on the ULX3S
1x16x8 (docs/fpga.md, session 19), so they use the plain one.

Write side: one client (store). AW bursts are cut the same way; W beats follow the AW
bursts already issued (WLAST from a FIFO of burst lengths) and B responses are counted so
that the client can tell when every write has landed.

Every channel's payload comes from registers or FIFO entries that change only on that
channel's handshake, so it is stable while VALID is high and READY low, and VALID never
drops before its handshake.
"""
from __future__ import annotations

from amaranth.hdl import Cat, Elaboratable, Module, Mux, Signal
from amaranth.lib import fifo, wiring
from amaranth.lib.wiring import In, Out

from vtalab.spec import Config

from .channel_slices import FifoSlice, RegisterSlice
from .interfaces import (ADDR_BITS, AXI_BOUNDARY, AXI_BURST_INCR, AXI_MAX_BEATS, BEATS_BITS,
                         AxiSignature, ReadClientSignature, WriteClientSignature)

TAGS = 8                 # read bursts in flight
#: a read client's response entries: a credit is free again four cycles after its beat
#: is dispatched (dispatch register, FIFO write, the client's pop, its registered return)
RESPONSE_DEPTH = 8
WRITE_BURSTS = 8         # write bursts whose data is not yet sent


class BurstSplitter(Elaboratable):
    """Holds one request (addr, beats) and offers it as a sequence of legal bursts.

    Retimed for Fmax: a request waits in a staging register (``ready`` = the stage is
    free), so the client's request mux never reaches the burst arithmetic; each burst's
    length is computed into a register the cycle before it is offered (``valid``), so the
    4 KiB / 256-beat / remaining minimum never feeds the AXI address channel or the
    address adder in the same cycle. The beats left in the 4 KiB page are a register too.
    """

    def __init__(self, bus_bytes: int):
        self.bus_bytes = bus_bytes
        self.load = Signal()                       # take start_addr/start_beats (needs ready)
        self.ready = Signal()                      # the staging register is free
        self.start_addr = Signal(ADDR_BITS)
        self.start_beats = Signal(BEATS_BITS)
        self.busy = Signal()                       # a request is staged or being split
        self.valid = Signal()                      # a burst is on offer
        self.addr = Signal(ADDR_BITS)
        self.burst_len = Signal(8)                 # AXI xLEN = beats - 1
        self.advance = Signal()                    # the burst on offer was accepted
        self.promote = Signal()                    # the staged request starts being split

    def elaborate(self, platform):
        m = Module()
        shift = self.bus_bytes.bit_length() - 1
        boundary_bits = AXI_BOUNDARY.bit_length() - 1
        staged, stage_addr, stage_beats = Signal(), Signal(ADDR_BITS), Signal(BEATS_BITS)
        active = Signal()                          # addr/remaining hold a request
        remaining = Signal(BEATS_BITS)
        beats = Signal(range(AXI_MAX_BEATS + 1))   # of the burst on offer
        promote = self.promote                     # stage -> splitter this cycle
        m.d.comb += [
            promote.eq(staged & ~active),
            self.ready.eq(~staged | promote),
            self.busy.eq(staged | active),
        ]
        with m.If(self.load):
            m.d.sync += [staged.eq(1), stage_addr.eq(self.start_addr),
                         stage_beats.eq(self.start_beats)]
        with m.Elif(promote):
            m.d.sync += staged.eq(0)
        # Beats left in the current 4 KiB page are kept in registers (computed at load,
        # counted down per burst), so a burst's length is one short compare away from
        # flip-flops: min(beats left, page left, 256).
        page_beats = AXI_BOUNDARY >> shift
        stage_page, page_left = Signal(range(page_beats + 1)), Signal(range(page_beats + 1))
        with m.If(self.load):
            m.d.sync += stage_page.eq(page_beats - self.start_addr[shift:boundary_bits])
        src_left = Mux(promote, stage_beats, remaining)
        src_page = Mux(promote, stage_page, page_left)
        limit = Mux(src_page > AXI_MAX_BEATS, AXI_MAX_BEATS, src_page)
        next_beats = Mux(src_left < limit, src_left, limit)
        m.d.comb += self.burst_len.eq(beats - 1)
        with m.If(promote):
            m.d.sync += [self.addr.eq(stage_addr), remaining.eq(stage_beats),
                         page_left.eq(stage_page),
                         active.eq(stage_beats != 0), self.valid.eq(stage_beats != 0),
                         beats.eq(next_beats)]
        with m.Elif(self.advance):
            m.d.sync += [self.addr.eq(self.addr + (beats << shift)),
                         remaining.eq(remaining - beats), self.valid.eq(0),
                         page_left.eq(Mux(page_left == beats, page_beats, page_left - beats)),
                         active.eq(remaining != beats)]
        with m.Elif(active & ~self.valid):
            m.d.sync += [self.valid.eq(1), beats.eq(next_beats)]
        return m


def round_robin(m: Module, requests: list, last: Signal) -> tuple[Signal, Signal]:
    """Grant index and 'any' for a list of request bits, starting after ``last``."""
    n = len(requests)
    grant = Signal(range(max(n, 2)))
    any_req = Signal()
    m.d.comb += any_req.eq(_any(requests))
    for start in range(n):
        with m.If(last == (start - 1) % n):
            # Lowest priority to the client granted last: scan from start, wrapping round.
            order = [(start + k) % n for k in range(n)]
            for idx in reversed(order):
                with m.If(requests[idx]):
                    m.d.comb += grant.eq(idx)
    return grant, any_req


def _any(bits):
    result = bits[0]
    for bit in bits[1:]:
        result = result | bit
    return result


class AxiMaster(wiring.Component):
    """AXI4 master port ``axi`` serving read clients ``read_<i>`` and write client ``write``."""

    def __init__(self, cfg: Config, n_read: int = 3):
        self.cfg = cfg
        self.n_read = n_read
        members = {"axi": Out(AxiSignature(cfg.bus_bits)),
                   "write": In(WriteClientSignature(cfg.bus_bits))}
        for i in range(n_read):
            members[f"read_{i}"] = In(ReadClientSignature(cfg.bus_bits))
        super().__init__(members)

    def read_port(self, index: int):
        return getattr(self, f"read_{index}")

    def elaborate(self, platform):
        m = Module()
        self._read_side(m)
        self._write_side(m)
        return m

    # ---- reads ---------------------------------------------------------------------------
    def _read_side(self, m: Module):
        cfg, axi = self.cfg, self.axi
        clients = [self.read_port(i) for i in range(self.n_read)]
        m.submodules.ar_split = split = BurstSplitter(cfg.bus_bytes)
        # the owner of the oldest burst from a register (the head entry's): RREADY and the
        # dispatch start at flip-flops, not a LUT-RAM read; an owner reaches it the cycle
        # after its burst is issued, in time for a first beat one cycle after AR
        m.submodules.tags = tags = FifoSlice(max(1, (self.n_read - 1).bit_length()), TAGS,
                                             registered=True)
        owner = Signal(range(max(self.n_read, 2)))
        staged_owner = Signal.like(owner)
        last = Signal(range(max(self.n_read, 2)))
        requests = [_request_slice(m, f"req_slice_{i}", c.req) for i, c in enumerate(clients)]
        grant, any_req = round_robin(m, [r.o_valid for r in requests], last)
        take = Signal()
        m.d.comb += take.eq(split.ready & any_req)
        for i, r in enumerate(requests):
            m.d.comb += r.o_ready.eq(split.ready & (grant == i))
        with m.If(take):
            m.d.sync += [staged_owner.eq(grant), last.eq(grant)]
        with m.If(split.promote):                 # the staged request moves on
            m.d.sync += owner.eq(staged_owner)
        m.d.comb += [
            split.load.eq(take),
            split.start_addr.eq(_pick(requests, grant, lambda r: r.o_data[:ADDR_BITS])),
            split.start_beats.eq(_pick(requests, grant, lambda r: r.o_data[ADDR_BITS:])),
            axi.araddr.eq(split.addr),
            axi.arlen.eq(split.burst_len),
            axi.arsize.eq(cfg.bus_bytes.bit_length() - 1),
            axi.arburst.eq(AXI_BURST_INCR),
            axi.arvalid.eq(split.valid & tags.i_ready),
            split.advance.eq(axi.arvalid & axi.arready),
            tags.i_valid.eq(split.advance),
            tags.i_data.eq(owner),
        ]
        self._dispatch(m, clients, tags)

    def _dispatch(self, m: Module, clients: list, tags) -> None:
        """R beats into the owner's response FifoSlice through a dispatch register, paced
        by credits: ``credit[i]`` counts client i's free response entries not yet spoken
        for, so RREADY comes from the master's own registers (the tag FIFO's head, a
        credit count) and no client's FIFO level reaches it. A client's pops come back a
        cycle late (registered): RESPONSE_DEPTH covers that round trip, so one client
        still takes a beat per cycle."""
        axi, bus_bits = self.axi, self.cfg.bus_bits
        head = tags.o_data
        credits = [Signal(range(RESPONSE_DEPTH + 1), init=RESPONSE_DEPTH, name=f"credit_{i}")
                   for i in range(self.n_read)]
        fire = Signal()
        m.d.comb += [
            axi.rready.eq(tags.o_valid & _pick(credits, head, lambda c: c != 0)),
            fire.eq(axi.rvalid & axi.rready),
            tags.o_ready.eq(fire & axi.rlast),
        ]
        beat = Signal(bus_bits, name="r_dispatch_data")
        m.d.sync += beat.eq(axi.rdata)             # every cycle: no enable waits on RVALID
        for i, client in enumerate(clients):
            m.submodules[f"resp_slice_{i}"] = cs = FifoSlice(bus_bits, depth=RESPONSE_DEPTH)
            sent, popped = Signal(name=f"r_dispatch_{i}"), Signal(name=f"r_popped_{i}")
            ours = fire & (head == i)
            m.d.sync += [sent.eq(ours), popped.eq(cs.o_valid & cs.o_ready),
                         credits[i].eq(credits[i] - ours + popped)]
            m.d.comb += [
                cs.i_data.eq(beat),
                cs.i_valid.eq(sent),
                client.resp.payload.eq(cs.o_data),
                client.resp.valid.eq(cs.o_valid),
                cs.o_ready.eq(client.resp.ready),
            ]

    # ---- writes --------------------------------------------------------------------------
    def _write_side(self, m: Module):
        cfg, axi, client = self.cfg, self.axi, self.write
        m.submodules.aw_split = split = BurstSplitter(cfg.bus_bytes)
        m.submodules.wlens = wlens = fifo.SyncFIFO(width=8, depth=WRITE_BURSTS)
        outstanding = Signal(range(WRITE_BURSTS * 4 + 1))
        beat = Signal(8)
        m.d.comb += [
            client.req.ready.eq(split.ready),
            split.load.eq(client.req.valid & split.ready),
            split.start_addr.eq(client.req.payload.addr),
            split.start_beats.eq(client.req.payload.beats),
            axi.awaddr.eq(split.addr),
            axi.awlen.eq(split.burst_len),
            axi.awsize.eq(cfg.bus_bytes.bit_length() - 1),
            axi.awburst.eq(AXI_BURST_INCR),
            axi.awvalid.eq(split.valid & wlens.w_rdy & (outstanding < WRITE_BURSTS * 4 - 1)),
            split.advance.eq(axi.awvalid & axi.awready),
            wlens.w_en.eq(split.advance),
            wlens.w_data.eq(split.burst_len),
        ]
        # write data through a FIFO slice: the slave's wready never reaches the
        # client's packing logic in the same cycle
        m.submodules.w_slice = ws = FifoSlice(cfg.bus_bits + cfg.bus_bytes)
        m.d.comb += [ws.i_valid.eq(client.data.valid), client.data.ready.eq(ws.i_ready),
                     ws.i_data.eq(Cat(client.data.payload.data, client.data.payload.strb))]
        w_fire = Signal()
        m.d.comb += [
            axi.wdata.eq(ws.o_data[:cfg.bus_bits]),
            axi.wstrb.eq(ws.o_data[cfg.bus_bits:]),
            axi.wvalid.eq(ws.o_valid & wlens.r_rdy),
            axi.wlast.eq(beat == wlens.r_data),
            ws.o_ready.eq(axi.wready & wlens.r_rdy),
            w_fire.eq(axi.wvalid & axi.wready),
            wlens.r_en.eq(w_fire & axi.wlast),
            axi.bready.eq(1),
        ]
        with m.If(w_fire):
            m.d.sync += beat.eq(Mux(axi.wlast, 0, beat + 1))
        b_fire = axi.bvalid & axi.bready
        with m.If(split.advance & ~b_fire):
            m.d.sync += outstanding.eq(outstanding + 1)
        with m.Elif(b_fire & ~split.advance):
            m.d.sync += outstanding.eq(outstanding - 1)
        m.d.comb += client.idle.eq(~split.busy & (outstanding == 0) & ~client.req.valid
                                 & ~ws.o_valid)


def _request_slice(m: Module, name: str, req) -> RegisterSlice:
    """A register slice on a client's request channel: the client's valid and payload
    (often computed) and its ready never meet the arbiter's logic in one cycle."""
    m.submodules[name] = rs = RegisterSlice(ADDR_BITS + BEATS_BITS)
    m.d.comb += [rs.i_valid.eq(req.valid), req.ready.eq(rs.i_ready),
                 rs.i_data.eq(Cat(req.payload.addr, req.payload.beats))]
    return rs


def _pick(items, index, getter):
    """getter(items[index]) as a mux chain."""
    result = getter(items[0])
    for i in range(1, len(items)):
        result = Mux(index == i, getter(items[i]), result)
    return result
