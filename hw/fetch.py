"""The fetch module: burst-reads the instruction stream and routes it to the three modules.

Instructions are requested in chunks of up to ``CHUNK`` and only while the instruction
buffer has room for a whole chunk, so read data never waits on a full buffer and
never blocks the shared R channel. A dispatcher moves each buffered instruction to the
load queue (LOAD inp/wgt), the store queue (STORE) or the compute queue (the rest).

Every instruction passes the program-order checks of hw/fetch_check.py on its way to the
dispatcher; the first that fails is dropped with everything after it, no more instructions
are requested, and ``aborted`` tells the core to end the run once the modules are idle.
"""
from __future__ import annotations

from amaranth.hdl import Cat, Module, Mux, Signal
from amaranth.lib import data, fifo, wiring
from amaranth.lib.wiring import In, Out

from vtalab.spec import Config
from vtalab.spec.isa import INSN_BITS, INSN_BYTES

from .channel_slices import FifoSlice
from .dma_reader import log2
from .fetch_check import DECODE_BITS, FetchCheck
from .interfaces import ADDR_BITS, ReadClientSignature, insn_stream
from .isa_layout import isa_layouts

CHUNK = 8            # instructions per read request
BUFFER_DEPTH = 16    # instructions fetched and not yet dispatched
QUEUE_DEPTH = 8      # per-module instruction queues
COUNT_BITS = 32


class Fetch(wiring.Component):
    """On ``start``, fetches ``insn_count`` instructions from byte address ``insn_addr``."""

    def __init__(self, cfg: Config):
        self.cfg = cfg
        super().__init__({
            "start": In(1), "insn_addr": In(ADDR_BITS), "insn_count": In(COUNT_BITS),
            "busy": Out(1),
            "aborted": Out(1), "error_code": Out(8), "error_index": Out(COUNT_BITS),
            "dma": Out(ReadClientSignature(cfg.bus_bits)),
            "load_insn": Out(insn_stream()),
            "compute_insn": Out(insn_stream()),
            "store_insn": Out(insn_stream()),
        })

    def elaborate(self, platform):
        m = Module()
        # Registered output, and each entry carries its destination and its checks
        # (decoded on the way in), so the dispatch decision and the drop start from
        # flip-flops (ECP5 critical paths).
        m.submodules.buffer = buffer = fifo.SyncFIFOBuffered(
            width=INSN_BITS + 2 + DECODE_BITS, depth=BUFFER_DEPTH)
        buffer_in, unpacked = Signal(INSN_BITS), Signal()
        reserved = Signal(range(BUFFER_DEPTH + 1))
        requested = Signal(range(CHUNK + 1))
        chunk_start, later = self._issuer(m, reserved, requested)
        self._unpacker(m, buffer, buffer_in, unpacked, chunk_start, requested)
        self._decoder(m, buffer, buffer_in, unpacked)
        moved = self._dispatcher(m, buffer)
        # a moved instruction frees its slot a cycle later (``reserved`` over-counts for a
        # cycle, never under): the FIFOs' handshakes stay out of the reservation's adder
        moved_q = Signal()
        m.d.sync += moved_q.eq(moved)
        with m.If(self.start):
            m.d.sync += reserved.eq(0)
        with m.Else():
            m.d.sync += reserved.eq(reserved + Mux(self.dma.req.valid & self.dma.req.ready,
                                                   requested, 0) - moved_q)
        m.d.comb += self.busy.eq((requested != 0) | (later != 0) | (reserved != 0))
        return m

    def _issuer(self, m, reserved, requested):
        """(the request's address, the instructions after the requested chunk). The
        instructions left are kept as ``requested`` = min(left, CHUNK) and ``later``, the
        rest, both registers: the next chunk is one compare of ``later`` (and the rest
        after it one subtract beside it), not a 32-bit subtract then a compare, and no
        compare is in front of the request's valid and the buffer accounting."""
        cfg, req = self.cfg, self.dma.req
        log_b = log2(cfg.bus_bytes)
        addr = Signal(ADDR_BITS)
        later = Signal(COUNT_BITS)

        def split(left):
            short = left < CHUNK
            return Mux(short, left, CHUNK), Mux(short, 0, left - CHUNK)
        with m.If(self.start):
            first, rest = split(self.insn_count)
            m.d.sync += [addr.eq(self.insn_addr), requested.eq(first), later.eq(rest)]
        m.d.comb += [
            # room for a whole chunk (a constant compare, not reserved + requested)
            req.valid.eq((requested != 0) & (reserved <= BUFFER_DEPTH - CHUNK)
                         & ~self.start),
            req.payload.addr.eq(addr >> log_b << log_b),
            req.payload.beats.eq((addr[:log_b] + requested * INSN_BYTES + cfg.bus_bytes - 1)
                                 >> log_b),
        ]
        with m.If(req.valid & req.ready):
            following, rest = split(later)
            m.d.sync += [addr.eq(addr + requested * INSN_BYTES), requested.eq(following),
                         later.eq(rest)]
        with m.If(self.aborted & ~self.start):      # the rest would only be dropped
            m.d.sync += [later.eq(0), requested.eq(0)]
        return addr, later

    def _unpacker(self, m, buffer, buffer_in, unpacked, chunk_addr, requested):
        cfg, resp = self.cfg, self.dma.resp
        if cfg.bus_bytes <= INSN_BYTES:
            per_insn = INSN_BYTES // cfg.bus_bytes
            parts = Signal(max(1, INSN_BITS - cfg.bus_bits))
            count = Signal(range(max(per_insn, 2)))
            last = count == per_insn - 1
            m.d.comb += [
                resp.ready.eq(buffer.w_rdy),
                buffer_in.eq(Cat(parts[:INSN_BITS - cfg.bus_bits], resp.payload)
                                  if per_insn > 1 else resp.payload),
                unpacked.eq(resp.valid & last),
            ]
            with m.If(resp.valid & resp.ready):
                if per_insn > 1:
                    m.d.sync += [parts.word_select(count, cfg.bus_bits).eq(resp.payload),
                                 count.eq(Mux(last, 0, count + 1))]
            return
        # Wide bus: several instructions per beat; a chunk may start mid-beat.
        per_beat = cfg.bus_bytes // INSN_BYTES
        log_i, log_b = log2(INSN_BYTES), log2(cfg.bus_bytes)
        m.submodules.chunks = chunks = fifo.SyncFIFO(
            width=len(chunk_addr[log_i:log_b]) + len(requested), depth=4)
        m.d.comb += [chunks.w_en.eq(self.dma.req.valid & self.dma.req.ready),
                     chunks.w_data.eq(Cat(chunk_addr[log_i:log_b], requested))]
        first_slot = chunks.r_data[:log_b - log_i]
        chunk_count = chunks.r_data[log_b - log_i:]
        index = Signal(range(CHUNK + 1))          # instruction within the chunk
        slot_reg = Signal(range(per_beat))
        slot = Signal(range(per_beat))
        take = Signal()
        chunk_last = index == chunk_count - 1
        m.d.comb += [
            slot.eq(Mux(index == 0, first_slot, slot_reg)),
            take.eq(resp.valid & chunks.r_rdy & buffer.w_rdy),
            unpacked.eq(take),
            buffer_in.eq(resp.payload.word_select(slot, INSN_BITS)),
            resp.ready.eq(take & ((slot == per_beat - 1) | chunk_last)),
            chunks.r_en.eq(take & chunk_last),
        ]
        with m.If(take):
            m.d.sync += [slot_reg.eq(slot + 1), index.eq(Mux(chunk_last, 0, index + 1))]

    def _decoder(self, m, buffer, buffer_in, unpacked) -> None:
        """Each unpacked instruction and its decode reach the buffer a cycle later, from
        registers: the decode's compares end at flip-flops, not at the buffer's LUT-RAM
        write. The buffer has room for it: its slot was reserved with the request
        (``reserved`` counts it), and ``buffer.w_rdy`` gated the unpacking."""
        route = FetchCheck.route(data.View(isa_layouts(self.cfg).mem, buffer_in))
        m.d.sync += [buffer.w_en.eq(unpacked),
                     buffer.w_data.eq(Cat(buffer_in, route["load"], route["store"],
                                          FetchCheck.decode(self.cfg, buffer_in)))]

    def _dispatcher(self, m, buffer) -> Signal:
        # A slice between the buffer and the queues: the buffer's read enable (the clock
        # enable of its 130 output flip-flops) comes from the slice's level register, not
        # from the chosen queue's room. ``moved`` (leaving the slice) frees the
        # slot, so ``reserved`` counts the slice too and ``busy`` covers it.
        m.submodules.dispatch = slice_ = FifoSlice(INSN_BITS + 3)
        m.submodules.check = check = FetchCheck(self.cfg)
        m.d.comb += [slice_.i_valid.eq(buffer.r_rdy),
                     slice_.i_data.eq(Cat(buffer.r_data[:INSN_BITS + 2], check.drop)),
                     buffer.r_en.eq(slice_.i_ready),
                     check.start.eq(self.start), check.insn_count.eq(self.insn_count),
                     check.flags.eq(buffer.r_data[INSN_BITS + 2:]),
                     check.enter.eq(buffer.r_rdy & slice_.i_ready),
                     self.aborted.eq(check.aborted), self.error_code.eq(check.latched),
                     self.error_index.eq(check.index)]
        insn = slice_.o_data[:INSN_BITS]
        is_load, is_store = slice_.o_data[INSN_BITS], slice_.o_data[INSN_BITS + 1]
        drop = slice_.o_data[INSN_BITS + 2]
        moved = Signal()
        targets = [(self.load_insn, is_load & ~drop), (self.store_insn, is_store & ~drop),
                   (self.compute_insn, ~is_load & ~is_store & ~drop)]
        leaves = [drop]                     # a dropped instruction leaves at once
        for name, (port, chosen) in zip(("load_q", "store_q", "compute_q"), targets):
            queue = fifo.SyncFIFOBuffered(width=INSN_BITS, depth=QUEUE_DEPTH)
            m.submodules[name] = queue
            m.d.comb += [queue.w_data.eq(insn),
                         queue.w_en.eq(slice_.o_valid & chosen),
                         port.payload.eq(queue.r_data), port.valid.eq(queue.r_rdy),
                         queue.r_en.eq(port.ready)]
            leaves.append(chosen & queue.w_rdy)
        m.d.comb += [moved.eq(slice_.o_valid & Cat(*leaves).any()), slice_.o_ready.eq(moved)]
        return moved
