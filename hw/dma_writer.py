"""2-D strided DMA from an SRAM buffer (out) to DRAM: the STORE datapath.

Entries ``sram_base + y * x_size + x`` go to DRAM entries ``dram_base + y * x_stride + x``.
The issuer sends one write request per row; the reader streams entries out of the SRAM
into a small FIFO (credit-counted, so the SRAM's read latency never loses a beat); the
packer cuts each entry into bus beats (wide entries) or gathers several entries into one
beat with byte strobes (narrow entries). The W payload sits in registers or at a FIFO head
that only change on a handshake, so it is stable under back-pressure.
"""
from __future__ import annotations

from amaranth.hdl import Const, Module, Mux, Signal
from amaranth.lib import data, fifo, wiring
from amaranth.lib.wiring import In, Out

from vtalab.spec import Config
from vtalab.spec.isa import INSN_BITS

from .dma_reader import log2, row_requests
from .ecp5_dsp import registered_product
from .interfaces import ADDR_BITS, WriteClientSignature
from .isa_layout import isa_layouts
from .sram import entry_bits, read_signature

ENTRY_FIFO_DEPTH = 4


class DmaWriter(wiring.Component):
    """Runs the STORE in ``insn`` when ``start`` strobes; ``busy`` until DRAM acked it all.
    ``insn`` must be held from the cycle before ``start`` (the Store unit's word register
    is) until ``busy`` falls. ``overflow`` strobes for an entry read past the end of the
    buffer (its read wraps: the run is in error, hw/error_latch.py)."""

    def __init__(self, cfg: Config, buffer: str = "out"):
        self.cfg, self.buffer = cfg, buffer
        self.entry_bytes = cfg.entry_bytes(buffer)
        super().__init__({
            "start": In(1),
            "insn": In(INSN_BITS),
            "busy": Out(1), "overflow": Out(1),
            "dma": Out(WriteClientSignature(cfg.bus_bits)),
            "read": In(read_signature(entry_bits(cfg, buffer), cfg.depth(buffer))),
        })

    def elaborate(self, platform):
        m = Module()
        # the start strobe through a register of our own: it comes from a state register
        # far away (Load/Store/Compute), and here it fans out to every field register
        self._start = Signal(name="start_q")
        m.d.sync += self._start.eq(self.start)
        insn = data.View(isa_layouts(self.cfg).mem, self.insn)
        f = {n: Signal(insn[n].shape(), name=n)
             for n in ("sram_base", "dram_base", "y_size", "x_size", "x_stride")}
        with m.If(self._start):
            m.d.sync += [reg.eq(insn[n]) for n, reg in f.items()]
        issuing = self._issuer(m, insn, f)
        m.submodules.entries = entries = fifo.SyncFIFO(width=self.entry_bytes * 8,
                                                       depth=ENTRY_FIFO_DEPTH)
        reading = self._reader(m, platform, insn, entries)
        packing = self._packer(m, insn, f, entries)
        started = Signal()
        m.d.sync += started.eq(self._start)
        m.d.comb += self.busy.eq(self._start | started | issuing | reading | packing
                                 | entries.r_rdy | ~self.dma.idle)
        return m

    def _issuer(self, m, insn, f) -> Signal:
        return row_requests(m, self.cfg, self.entry_bytes, insn, f, self.dma.req,
                            self._start, insn.y_size)

    def _reader(self, m, platform, insn, entries) -> Signal:
        # the entry count, a product registered every cycle (in a DSP's output register on
        # ECP5 boards): the instruction is held from the cycle before the start strobe
        entries_total = registered_product(m, platform, insn.y_size, insn.x_size, Const(1),
                                           name="entries_total")
        left = Signal(len(entries_total))
        more = Signal()                     # left != 0, kept as a register
        aw = self.cfg.addr_bits(self.buffer)
        addr, base_high = Signal(aw + 1), Signal()      # a bit wider: past the end shows
        in_flight = Signal()
        with m.If(self._start):
            m.d.sync += [left.eq(entries_total), more.eq(entries_total != 0),
                         addr.eq(insn.sram_base),
                         base_high.eq(insn.sram_base[aw + 1:].any())]
        issue = Signal()
        m.d.comb += [
            issue.eq(~self._start & more & (entries.level + in_flight < ENTRY_FIFO_DEPTH)),
            self.read.addr.eq(addr),
            entries.w_en.eq(in_flight),
            entries.w_data.eq(self.read.data),
        ]
        m.d.sync += [in_flight.eq(issue),
                     self.overflow.eq(issue & (addr[aw] | base_high))]
        with m.If(issue):
            m.d.sync += [addr.eq(addr + 1), left.eq(left - 1), more.eq(left != 1)]
        return more | in_flight

    def _packer(self, m, insn, f, entries) -> Signal:
        cfg, out = self.cfg, self.dma.data
        ebits = self.entry_bytes * 8
        if self.entry_bytes >= cfg.bus_bytes:
            per_entry = self.entry_bytes // cfg.bus_bytes
            beat = Signal(range(per_entry))
            m.d.comb += [out.valid.eq(entries.r_rdy),
                         out.payload.data.eq(entries.r_data.word_select(beat, cfg.bus_bits)),
                         out.payload.strb.eq(-1),
                         entries.r_en.eq(out.ready & (beat == per_entry - 1))]
            with m.If(out.valid & out.ready):
                m.d.sync += beat.eq(Mux(beat == per_entry - 1, 0, beat + 1))
            return Signal()
        per_beat = cfg.bus_bytes // self.entry_bytes
        log_e, log_b = log2(self.entry_bytes), log2(cfg.bus_bytes)
        row_addr = Signal(ADDR_BITS)
        # the column as registered flags and a down-count: no compare or adder sits between
        # the FIFO's data and the beat register
        first, last = Signal(name="col_first"), Signal(name="col_last")
        left = Signal.like(f["x_size"], name="cols_left")       # after the current one
        x_m1, x_is_1 = Signal.like(f["x_size"], name="x_size_m1"), Signal(name="x_size_is_1")
        slot_reg = Signal(range(per_beat))
        acc_data, acc_strb = Signal(cfg.bus_bits), Signal(cfg.bus_bytes)
        with m.If(self._start):
            m.d.sync += [row_addr.eq(insn.dram_base << log_e), first.eq(1),
                         left.eq(insn.x_size - 1), x_m1.eq(insn.x_size - 1),
                         last.eq(insn.x_size == 1), x_is_1.eq(insn.x_size == 1)]
        slot = Mux(first, row_addr[log_e:log_b], slot_reg)
        new_data, new_strb = Signal(cfg.bus_bits), Signal(cfg.bus_bytes)
        take = Signal()
        m.d.comb += [
            take.eq(entries.r_rdy & (~out.valid | out.ready)),
            entries.r_en.eq(take),
            new_data.eq(acc_data), new_strb.eq(acc_strb),
            new_data.word_select(slot, ebits).eq(entries.r_data),
            new_strb.word_select(slot, self.entry_bytes).eq(-1),
        ]
        with m.If(out.valid & out.ready):
            m.d.sync += out.valid.eq(0)
        with m.If(take):
            m.d.sync += slot_reg.eq(slot + 1)
            with m.If(last):
                m.d.sync += [first.eq(1), left.eq(x_m1), last.eq(x_is_1),
                             row_addr.eq(row_addr + (f["x_stride"] << log_e))]
            with m.Else():
                m.d.sync += [first.eq(0), left.eq(left - 1), last.eq(left == 1)]
            with m.If(last | (slot == per_beat - 1)):
                m.d.sync += [out.valid.eq(1), out.payload.data.eq(new_data),
                             out.payload.strb.eq(new_strb), acc_data.eq(0), acc_strb.eq(0)]
            with m.Else():
                m.d.sync += [acc_data.eq(new_data), acc_strb.eq(new_strb)]
        return out.valid
