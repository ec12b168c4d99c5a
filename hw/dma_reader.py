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

from amaranth.hdl import Cat, Module, Mux, Signal
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from vtalab.spec import Config
from vtalab.spec.isa import INSN_BITS

from .dma_assembler import assembled_entries
from .interfaces import ADDR_BITS, ReadClientSignature
from .isa_layout import isa_layouts
from .registers import register_copies
from .sram import entry_bits, write_signature

PADS = ("y_pad_0", "y_pad_1", "x_pad_0", "x_pad_1")


def log2(value: int) -> int:
    return value.bit_length() - 1


class DmaReader(wiring.Component):
    """Runs the LOAD in ``insn`` when ``start`` strobes; ``busy`` until the last entry is
    written (the SRAM writes are registered: each lands a cycle after its entry).
    ``overflow`` strobes for an entry past the end of the buffer (its write wraps: the
    run is in error, hw/error_latch.py)."""

    def __init__(self, cfg: Config, buffer: str, pad: bool = False, two_d: bool = True,
                 write_copies: int = 0):
        self.cfg, self.buffer, self.pad, self.two_d = cfg, buffer, pad, two_d
        self.entry_bytes = cfg.entry_bytes(buffer)
        self.write_copy_count = write_copies
        members = {
            "start": In(1),
            "insn": In(INSN_BITS),
            "busy": Out(1), "overflow": Out(1),
            "dma": Out(ReadClientSignature(cfg.bus_bits)),
            "write": In(write_signature(entry_bits(cfg, buffer), cfg.depth(buffer))),
        }
        if write_copies:        # the write's enable and address once per SRAM slice
            members["write_copies"] = Out(data.ArrayLayout(data.StructLayout(
                {"en": 1, "addr": cfg.addr_bits(buffer)}), write_copies))
        super().__init__(members)

    def elaborate(self, platform):
        m = Module()
        # the start strobe through a register of our own: it comes from a state register
        # far away (Load/Store/Compute), and here it fans out to every field register
        self._start = Signal(name="start_q")
        m.d.sync += self._start.eq(self.start)
        insn = data.View(isa_layouts(self.cfg).mem, self.insn)
        fields, values = {}, {}
        for name in ("sram_base", "dram_base", "y_size", "x_size", "x_stride") + PADS:
            fields[name] = Signal(insn[name].shape(), name=name)
            value = insn[name]
            if name in PADS and not self.pad:
                value = 0
            if name == "y_size" and not self.two_d:
                value = 1
            values[name] = value
        with m.If(self._start):
            m.d.sync += [reg.eq(values[name]) for name, reg in fields.items()]
        issuing = self._issuer(m, fields)
        writing = self._writer(m, platform, fields)
        m.d.comb += self.busy.eq(self._start | issuing | writing | self.write.en)
        return m

    # ---- requests --------------------------------------------------------------------------
    def _issuer(self, m: Module, f: dict) -> Signal:
        insn = data.View(isa_layouts(self.cfg).mem, self.insn)
        rows = insn.y_size if self.two_d else 1
        return row_requests(m, self.cfg, self.entry_bytes, insn, f, self.dma.req,
                            self._start, rows)

    # ---- SRAM writes -----------------------------------------------------------------------
    def _writer(self, m: Module, platform, f: dict) -> Signal:
        """Walks the destination entries. Whether an entry is padding comes from four
        registered flags (x >= x_lo, x < x_hi, y >= y_lo, y < y_hi) updated by equality
        tests against bounds registered in the setup cycles after the LOAD starts (from the
        fields registered at start, so no adder sees the instruction word), so no adder or
        magnitude comparator sits between the counters and the SRAM write / R-channel
        ready."""
        cfg = self.cfg
        writing = Signal()
        xw, yw = len(f["x_size"]) + 1, len(f["y_size"]) + 1
        row, col = Signal(yw), Signal(xw)
        # one bit wider than the buffer's address: set from the entry past its end on
        aw = cfg.addr_bits(self.buffer)
        sram_addr, base_high = Signal(aw + 1), Signal()
        # bounds, from the fields registered at start: the ones from zero tests and single
        # adds in the first setup cycle, the ones from sums of those in the second; the
        # third's row flags see them all, and nothing is written before it ends
        bounds, later = {}, {}
        v = f
        for axis, width in (("x", xw), ("y", yw)):
            lo, size, hi_pad = v[f"{axis}_pad_0"], v[f"{axis}_size"], v[f"{axis}_pad_1"]
            hi_sum = Signal(width, name=f"{axis}_hi_sum")
            pad_m1 = Signal(width, name=f"{axis}_pad_1_m1")
            bounds[axis] = dict(
                hi_sum=(hi_sum, lo + size), pad_m1=(pad_m1, hi_pad - 1),
                lo_m1=(Signal(width, name=f"{axis}_lo_m1"), lo - 1),
                lo=(Signal(width, name=f"{axis}_lo"), lo),
                # sums of unsigned fields are zero only when every term is
                empty=(Signal(name=f"{axis}_empty"), (lo == 0) & (size == 0) & (hi_pad == 0)),
                ge0=(Signal(name=f"{axis}_ge0"), lo == 0),
                lt0=(Signal(name=f"{axis}_lt0"), (lo != 0) | (size != 0)),
            )
            later[axis] = dict(last=(Signal(width, name=f"{axis}_last"), hi_sum + pad_m1),
                               hi_m1=(Signal(width, name=f"{axis}_hi_m1"), hi_sum - 1),
                               hi_m2=(Signal(width, name=f"{axis}_hi_m2"), hi_sum - 2),
                               hi_is_1=(Signal(name=f"{axis}_hi_is_1"), hi_sum == 1))
        b = {axis: {k: reg for k, (reg, _) in d.items()} for axis, d in bounds.items()}
        for axis, d in later.items():
            b[axis].update({k: reg for k, (reg, _) in d.items()})
        first_cell, second_cell, third_cell = Signal(), Signal(), Signal()
        m.d.sync += [first_cell.eq(self._start), second_cell.eq(first_cell),
                     third_cell.eq(second_cell)]
        names = ("ge_x", "lt_x", "ge_y", "lt_y")
        flags = {n: Signal(name=n) for n in names}
        nxt = {n: Signal(name=f"{n}_next") for n in names}
        pad = Signal(init=1)               # ~(all four flags): a register, not a LUT chain
        with m.If(self._start):
            m.d.sync += [writing.eq(1), row.eq(0)]
        # the bounds load every cycle (no enable reaching a hundred flip-flops): the fields
        # change only at start, so they are right from the second setup cycle on
        m.d.sync += [reg.eq(value) for d in (*bounds.values(), *later.values())
                     for reg, value in d.values()]
        with m.If(second_cell):
            m.d.sync += [sram_addr.eq(f["sram_base"]),
                         base_high.eq(f["sram_base"][aw + 1:].any())]
            with m.If(b["x"]["empty"] | b["y"]["empty"]):
                m.d.sync += writing.eq(0)
        advance = Signal()
        at = _position_tests(m, col, row, b, advance)
        col_last = at["col_last"]
        col_next = Signal.like(col)
        # whether the next column is the data row's first / last: the unpacker registers
        # them; equality tests of registers per case, not the next column's adder
        first_next, last_next = Signal(), Signal()
        entry, entry_valid, take = self._unpacker(m, platform, f, first_next, last_next)
        m.d.comb += [
            advance.eq(writing & ~first_cell & ~second_cell & ~third_cell
                       & (pad | entry_valid)),
            take.eq(advance & ~pad),
        ]
        # the SRAM write from registers, a cycle later (``busy`` covers it): ``advance``
        # stays with the counters, not routed to every block RAM's write enable
        # (with a reset: a reset-less data register takes ``pad`` as its synchronous
        # reset, one flip-flop's route to hundreds of LSR pins)
        m.d.sync += [self.write.en.eq(advance), self.write.addr.eq(sram_addr),
                     self.overflow.eq(advance & (sram_addr[aw] | base_high))]
        if self.write_copy_count:
            copies = register_copies(m, platform, Cat(self.write.en, self.write.addr),
                                     Cat(advance, sram_addr[:aw]), self.write_copy_count,
                                     "write_copy")
            m.d.comb += [self.write_copies[k].eq(c) for k, c in enumerate(copies)]
        # the flags after an advance, from registers only: the late R-channel valid
        # (through ``advance``) meets the last multiplexer in front of ``pad``, not the tests
        stepped = {n: Signal(name=f"{n}_stepped") for n in names}
        with m.If(col_last):
            m.d.comb += [stepped["ge_x"].eq(b["x"]["ge0"]), stepped["lt_x"].eq(b["x"]["lt0"]),
                         stepped["ge_y"].eq(flags["ge_y"] | at["row_lo_m1"]),
                         stepped["lt_y"].eq(flags["lt_y"] & ~at["row_hi_m1"])]
        with m.Else():
            m.d.comb += [stepped["ge_x"].eq(flags["ge_x"] | at["col_lo_m1"]),
                         stepped["lt_x"].eq(flags["lt_x"] & ~at["col_hi_m1"]),
                         stepped["ge_y"].eq(flags["ge_y"]), stepped["lt_y"].eq(flags["lt_y"])]
        initial = {n: b[n[-1]][n[:2] + "0"] for n in names}
        m.d.sync += self.write.data.eq(self._zeroed(
            m, platform, entry, pad, second_cell | advance,
            ~_outside({n: Mux(second_cell, initial[n], stepped[n]) for n in names})))
        m.d.comb += [nxt[n].eq(flags[n]) for n in names] + [col_next.eq(col)]
        m.d.comb += [first_next.eq(col == b["x"]["lo"]), last_next.eq(col == b["x"]["hi_m1"])]
        with m.If(first_cell):
            m.d.comb += col_next.eq(0)
        with m.Elif(second_cell):
            m.d.comb += [nxt[n].eq(initial[n]) for n in names]
            m.d.sync += pad.eq(_outside(initial))
        with m.Elif(advance):
            m.d.comb += [nxt[n].eq(stepped[n]) for n in names]
            m.d.sync += [sram_addr.eq(sram_addr + 1), pad.eq(_outside(stepped))]
            with m.If(col_last):
                m.d.sync += row.eq(row + 1)
                m.d.comb += [col_next.eq(0), first_next.eq(b["x"]["ge0"]),
                             last_next.eq(b["x"]["hi_is_1"])]
                with m.If(at["row_last"]):
                    m.d.sync += writing.eq(0)
            with m.Else():
                m.d.comb += [col_next.eq(col + 1), first_next.eq(col == b["x"]["lo_m1"]),
                             last_next.eq(col == b["x"]["hi_m2"])]
        # otherwise the flags hold, and so does pad (always ~(all four flags))
        m.d.sync += [flags[n].eq(nxt[n]) for n in names] + [col.eq(col_next)]
        return writing

    def _zeroed(self, m: Module, platform, entry, pad, load, fill_next):
        """The SRAM write's data: the entry, or zeros for a pad entry (a buffer without
        padding never has one). Where the write is copied per SRAM slice, each slice's
        data has its own copy of ~``pad``, loading what ``pad`` loads when it does
        (``load``: the second setup cycle or a step; ``fill_next`` from registers only),
        so the late step reaches the copies' clock enables, not a LUT chain in front of
        them, and not one flip-flop routed to every slice."""
        if not self.pad:
            return entry
        n = max(1, self.write_copy_count)
        fills = register_copies(m, platform, ~pad, fill_next, n, "fill", enable=load)
        bits = len(entry) // n
        return Cat(*(Mux(fill, entry[k * bits:(k + 1) * bits], 0)
                     for k, fill in enumerate(fills)))

    def _unpacker(self, m: Module, platform, f: dict, first_next, last_next):
        """(entry, entry_valid, take): entries of the data rows, in order. The row
        first/last flags are registered from the writer's tests of its next column
        (correct from the second setup cycle on, when the bounds are loaded and nothing
        is written yet)."""
        cfg, ebytes = self.cfg, self.entry_bytes
        resp = self.dma.resp
        ebits = ebytes * 8
        take = Signal()
        entry_valid = Signal()
        if ebytes >= cfg.bus_bytes:
            return assembled_entries(m, platform, cfg, self.dma.resp, ebytes, take,
                                     entry_valid, max(1, self.write_copy_count)
                                     ), entry_valid, take
        # Narrow entries: several per beat; each data row starts at its DRAM offset.
        per_beat = cfg.bus_bytes // ebytes
        log_e, log_b = log2(ebytes), log2(cfg.bus_bytes)
        row_addr = Signal(ADDR_BITS)
        slot_reg = Signal(range(per_beat))
        slot = Signal(range(per_beat))
        with m.If(self._start):
            insn = data.View(isa_layouts(cfg).mem, self.insn)
            m.d.sync += row_addr.eq(insn.dram_base << log_e)
        row_first, row_last = Signal(), Signal()
        m.d.sync += [row_first.eq(first_next), row_last.eq(last_next)]
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


def row_requests(m: Module, cfg: Config, entry_bytes: int, insn, f: dict, req, start,
                 rows) -> Signal:
    """One DMA request per row of a LOAD/STORE (``rows`` of them); valid, address and beat
    count all come from registers (the next row's beat count is computed while the current
    row is on offer). ``f`` holds the instruction fields registered at ``start``."""
    log_e, log_b = log2(entry_bytes), log2(cfg.bus_bytes)
    row_addr = Signal(ADDR_BITS)
    rows_left = Signal.like(f["y_size"])

    def beats_for(low_bytes, x_size):
        if entry_bytes >= cfg.bus_bytes:
            return x_size << (log_e - log_b)
        return (low_bytes + (x_size << log_e) + cfg.bus_bytes - 1) >> log_b

    stride_bytes = f["x_stride"] << log_e
    # a row's bytes + bus_bytes - 1, registered at start: one adder to the next beat count
    span = Signal(len(f["x_size"]) + log_e + log_b + 1)
    with m.If(start):
        m.d.sync += span.eq((insn.x_size << log_e) + cfg.bus_bytes - 1)
    with m.If(start):
        m.d.sync += [row_addr.eq(insn.dram_base << log_e),
                     rows_left.eq(Mux(insn.x_size == 0, 0, rows)),
                     req.valid.eq((insn.x_size != 0) & (rows != 0)),
                     req.payload.beats.eq(beats_for((insn.dram_base << log_e)[:log_b],
                                                    insn.x_size))]
    with m.Elif(req.valid & req.ready):
        next_low = (row_addr[:log_b] + stride_bytes[:log_b])[:log_b]
        m.d.sync += [row_addr.eq(row_addr + stride_bytes),
                     rows_left.eq(rows_left - 1),
                     req.valid.eq(rows_left != 1),
                     req.payload.beats.eq(f["x_size"] << (log_e - log_b)
                                          if entry_bytes >= cfg.bus_bytes
                                          else (next_low + span) >> log_b)]
    m.d.comb += req.payload.addr.eq(row_addr >> log_b << log_b)
    return req.valid


def _position_tests(m: Module, col, row, b: dict, advance) -> dict:
    """The writer's equality tests of its column and row against the bounds, each a
    register (the padding flag's next value is then three LUT levels from flip-flops, not
    three more of 17-bit compares): loaded with the test of the next position, from the
    bound minus one after a step (col + 1 == K is col == K - 1), ``K == 0`` where the
    column wraps, else the current position. Right from the cycle after the third setup
    cycle on (the bounds are right in it), when the first entry can be written."""
    tests = {"col_lo_m1": (col, b["x"]["lo_m1"]), "col_hi_m1": (col, b["x"]["hi_m1"]),
             "col_last": (col, b["x"]["last"]), "row_lo_m1": (row, b["y"]["lo_m1"]),
             "row_hi_m1": (row, b["y"]["hi_m1"]), "row_last": (row, b["y"]["last"])}
    # the bounds minus one: hi_m1's is the bound register hi_m2, the others registered here
    belows = {"col_hi_m1": b["x"]["hi_m2"], "row_hi_m1": b["y"]["hi_m2"]}
    at = {name: Signal(name=f"at_{name}") for name in tests}
    for name, (value, bound) in tests.items():
        below = belows.get(name)
        if below is None:
            below = Signal.like(bound, name=f"{name}_below")
            m.d.sync += below.eq(bound - 1)
        if value is col:           # steps on every advance; to 0 after the row's last
            is_zero = Signal(name=f"{name}_is_0")
            m.d.sync += is_zero.eq(bound == 0)
            step, stepped = advance, Mux(at["col_last"], is_zero, value == below)
        else:                      # steps after the row's last column
            step, stepped = advance & at["col_last"], value == below
        m.d.sync += at[name].eq(Mux(step, stepped, value == bound))
    return at


def _outside(flags: dict):
    """Padding: the entry lies outside the data rows or columns."""
    return ~(flags["ge_x"] & flags["lt_x"] & flags["ge_y"] & flags["lt_y"])
