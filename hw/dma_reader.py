"""2-D strided DMA from DRAM into one SRAM buffer, zero-padding on the fly.

A LOAD fills ``(y_pad_0 + y_size + y_pad_1) x (x_pad_0 + x_size + x_pad_1)`` consecutive
entries from ``sram_base``; pad entries are zero, data row y comes from DRAM entries
``dram_base + y * x_stride + x``. Two halves run concurrently:

- the *issuer* sends one read request per data row (bus-aligned, whole beats);
- the *writer* walks the destination entries in order, writing zeros for pads and
  unpacking entries from the returning beats (several beats per entry when an entry is
  wider than the bus, several entries per beat when it is narrower).

Buffers without padding (wgt, uop) are built with ``pad=False``; a uop load is one row
(``two_d=False``: only sram_base, dram_base and x_size count).
"""
from __future__ import annotations

from amaranth.hdl import Module, Mux, Signal
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from vtalab.spec import Config
from vtalab.spec.isa import INSN_BITS

from .interfaces import ADDR_BITS, ReadClientSignature
from .isa_layout import isa_layouts
from .sram import entry_bits, write_signature

PADS = ("y_pad_0", "y_pad_1", "x_pad_0", "x_pad_1")


def log2(value: int) -> int:
    return value.bit_length() - 1


class DmaReader(wiring.Component):
    """Runs the LOAD in ``insn`` when ``start`` strobes; ``busy`` until the last entry."""

    def __init__(self, cfg: Config, buffer: str, pad: bool = False, two_d: bool = True):
        self.cfg, self.buffer, self.pad, self.two_d = cfg, buffer, pad, two_d
        self.entry_bytes = cfg.entry_bytes(buffer)
        super().__init__({
            "start": In(1),
            "insn": In(INSN_BITS),
            "busy": Out(1),
            "dma": Out(ReadClientSignature(cfg.bus_bits)),
            "write": In(write_signature(entry_bits(cfg, buffer), cfg.depth(buffer))),
        })

    def elaborate(self, platform):
        m = Module()
        insn = data.View(isa_layouts(self.cfg).mem, self.insn)
        fields = {}
        for name in ("sram_base", "dram_base", "y_size", "x_size", "x_stride") + PADS:
            fields[name] = Signal(insn[name].shape(), name=name)
        with m.If(self.start):
            for name, reg in fields.items():
                value = insn[name]
                if name in PADS and not self.pad:
                    value = 0
                if name == "y_size" and not self.two_d:
                    value = 1
                m.d.sync += reg.eq(value)
        issuing = self._issuer(m, fields)
        writing = self._writer(m, fields)
        m.d.comb += self.busy.eq(issuing | writing)
        return m

    # ---- requests --------------------------------------------------------------------------
    def _issuer(self, m: Module, f: dict) -> Signal:
        cfg, ebytes = self.cfg, self.entry_bytes
        log_e, log_b = log2(ebytes), log2(cfg.bus_bytes)
        row_addr = Signal(ADDR_BITS)
        rows_left = Signal.like(f["y_size"])
        req = self.dma.req
        with m.If(self.start):
            insn = data.View(isa_layouts(cfg).mem, self.insn)
            rows = insn.y_size if self.two_d else 1
            m.d.sync += [row_addr.eq(insn.dram_base << log_e),
                         rows_left.eq(Mux(insn.x_size == 0, 0, rows))]
        if ebytes >= cfg.bus_bytes:
            beats = f["x_size"] << (log_e - log_b)
        else:
            beats = (row_addr[:log_b] + (f["x_size"] << log_e) + cfg.bus_bytes - 1) >> log_b
        m.d.comb += [
            req.valid.eq(rows_left != 0),
            req.payload.addr.eq(row_addr >> log_b << log_b),
            req.payload.beats.eq(beats),
        ]
        with m.If(req.valid & req.ready):
            m.d.sync += [row_addr.eq(row_addr + (f["x_stride"] << log_e)),
                         rows_left.eq(rows_left - 1)]
        return req.valid

    # ---- SRAM writes -----------------------------------------------------------------------
    def _writer(self, m: Module, f: dict) -> Signal:
        cfg = self.cfg
        writing = Signal()
        rows_total = Signal(len(f["y_size"]) + 1)
        cols_total = Signal(len(f["x_size"]) + 1)
        row, col = Signal.like(rows_total), Signal.like(cols_total)
        sram_addr = Signal(cfg.addr_bits(self.buffer))
        with m.If(self.start):
            m.d.sync += [writing.eq(1), row.eq(0), col.eq(0)]
        m.d.comb += [rows_total.eq(f["y_pad_0"] + f["y_size"] + f["y_pad_1"]),
                     cols_total.eq(f["x_pad_0"] + f["x_size"] + f["x_pad_1"])]
        x_lo, x_hi = f["x_pad_0"], f["x_pad_0"] + f["x_size"]
        y_lo, y_hi = f["y_pad_0"], f["y_pad_0"] + f["y_size"]
        is_pad = (row < y_lo) | (row >= y_hi) | (col < x_lo) | (col >= x_hi)
        first_cell = Signal()
        m.d.sync += first_cell.eq(self.start)
        with m.If(first_cell):
            m.d.sync += sram_addr.eq(f["sram_base"])
            with m.If((rows_total == 0) | (cols_total == 0)):
                m.d.sync += writing.eq(0)
        entry, entry_valid, take = self._unpacker(m, f, col, x_lo, x_hi)
        advance = Signal()
        m.d.comb += [
            advance.eq(writing & ~first_cell & (is_pad | entry_valid)),
            take.eq(advance & ~is_pad),
            self.write.en.eq(advance),
            self.write.addr.eq(sram_addr),
            self.write.data.eq(Mux(is_pad, 0, entry)),
        ]
        with m.If(advance):
            m.d.sync += sram_addr.eq(sram_addr + 1)
            with m.If(col == cols_total - 1):
                m.d.sync += [col.eq(0), row.eq(row + 1)]
                with m.If(row == rows_total - 1):
                    m.d.sync += writing.eq(0)
            with m.Else():
                m.d.sync += col.eq(col + 1)
        return writing

    def _unpacker(self, m: Module, f: dict, col, x_lo, x_hi):
        """(entry, entry_valid, take): entries of the data rows, in order."""
        cfg, ebytes = self.cfg, self.entry_bytes
        resp = self.dma.resp
        ebits = ebytes * 8
        take = Signal()
        entry_valid = Signal()
        if ebytes >= cfg.bus_bytes:
            per_entry = ebytes // cfg.bus_bytes
            buf = Signal(ebits)
            count = Signal(range(per_entry))
            have = Signal()
            m.d.comb += [resp.ready.eq(~have | take), entry_valid.eq(have)]
            with m.If(take):
                m.d.sync += have.eq(0)
            with m.If(resp.valid & resp.ready):
                m.d.sync += buf.word_select(count, cfg.bus_bits).eq(resp.payload)
                with m.If(count == per_entry - 1):
                    m.d.sync += [count.eq(0), have.eq(1)]
                with m.Else():
                    m.d.sync += count.eq(count + 1)
            return buf, entry_valid, take
        # Narrow entries: several per beat; each data row starts at its DRAM offset.
        per_beat = cfg.bus_bytes // ebytes
        log_e, log_b = log2(ebytes), log2(cfg.bus_bytes)
        row_addr = Signal(ADDR_BITS)
        slot_reg = Signal(range(per_beat))
        slot = Signal(range(per_beat))
        with m.If(self.start):
            insn = data.View(isa_layouts(cfg).mem, self.insn)
            m.d.sync += row_addr.eq(insn.dram_base << log_e)
        row_first = col == x_lo
        row_last = col == x_hi - 1
        m.d.comb += [
            slot.eq(Mux(row_first, row_addr[log_e:log_b], slot_reg)),
            entry_valid.eq(resp.valid),
            resp.ready.eq(take & ((slot == per_beat - 1) | row_last)),
        ]
        with m.If(take):
            m.d.sync += slot_reg.eq(slot + 1)
            with m.If(row_last):
                m.d.sync += row_addr.eq(row_addr + (f["x_stride"] << log_e))
        return resp.payload.word_select(slot, ebits), entry_valid, take
