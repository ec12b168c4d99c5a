"""A DMA's entries of one or more whole beats, assembled from its response beats
(hw/dma_reader.py's writer takes them).

- One-beat entries queue in a small LUT-RAM FIFO: the take moves its read pointer, not the
  clock enable of a register as wide as the entry.
- Two-beat entries: the first beat collects in ``head``, the last completes ``entry``
  beside it, straight from the response (the response's ready comes from registers: a
  full entry only blocks the next entry's last beat).
- Entries of ``BEAT_STAGE_BEATS`` beats or more (the wgt and acc entries of every preset)
  are as wide as a whole row of block RAMs, so their registers spread over the die. The
  beat is registered once more first (``DMA_BEAT_STAGE``: a cycle more per LOAD), in a
  copy per region of the entry (the beats of one SRAM slice where the buffer is sliced,
  else ``REGION_BEATS``), and each group of head and entry registers loads from its own
  copy with an enable made of its copy's flip-flops: two half-length hops instead of one
  route from the response FIFO to the far end of the row. The next entry's last beat
  leaves the FIFO once the entry before is taken; it cannot meet one still landing, and
  with three beats or more per entry the staging costs no beat cycle.
"""
from __future__ import annotations

from amaranth.hdl import Cat, Module, Mux, Signal

from vtalab.spec import Config
from vtalab.spec.timing import BEAT_STAGE_BEATS

from .channel_slices import FifoSlice
from .registers import replicated_register

#: beats of an entry whose head and entry registers share one copy of the staged beat
REGION_BEATS = 4


def assembled_entries(m: Module, platform, cfg: Config, resp, entry_bytes: int, take,
                      entry_valid, slices: int = 1) -> Signal:
    """The entry the writer takes (when ``take``); ``entry_valid`` is driven here.
    ``slices``: the SRAM slices the writer writes (their block RAMs apart on the die)."""
    per_entry = entry_bytes // cfg.bus_bytes
    if per_entry == 1:
        m.submodules.beats = beats = FifoSlice(cfg.bus_bits)
        m.d.comb += [beats.i_data.eq(resp.payload), beats.i_valid.eq(resp.valid),
                     resp.ready.eq(beats.i_ready), entry_valid.eq(beats.o_valid),
                     beats.o_ready.eq(take)]
        return beats.o_data
    if per_entry < BEAT_STAGE_BEATS:
        return _direct(m, platform, cfg, resp, per_entry, take, entry_valid)
    return _staged(m, platform, cfg, resp, per_entry, take, entry_valid,
                   region_beats(per_entry, slices))


def region_beats(per_entry: int, slices: int) -> int:
    """Beats per region of a staged entry: a slice's beats (or one beat, where slices are
    narrower than a beat) when the slices split the entry at beat boundaries, so each
    region's registers sit beside the block RAMs they write; else REGION_BEATS."""
    if slices > 1 and (per_entry % slices == 0 or slices % per_entry == 0):
        return max(1, per_entry // slices)
    return REGION_BEATS


def _next_slot(m: Module, per_entry: int, beat):
    """The one-hot position of the next beat in its entry (a rotating bit)."""
    slot = Signal(per_entry, init=1)
    with m.If(beat):
        m.d.sync += slot.eq(slot.rotate_left(1))
    return slot


def _direct(m, platform, cfg, resp, per_entry, take, entry_valid) -> Signal:
    bus = cfg.bus_bits
    entry, have = Signal(per_entry * bus), Signal()
    head = Signal(bus * (per_entry - 1))
    beat = Signal()
    slot = _next_slot(m, per_entry, beat)
    at_last = slot[-1]
    m.d.comb += [resp.ready.eq(~(have & at_last)), beat.eq(resp.valid & resp.ready),
                 entry_valid.eq(have)]
    have_next = (beat & at_last) | (have & ~take)
    m.d.sync += have.eq(have_next)
    for j in range(per_entry - 1):
        with m.If(resp.valid & slot[j]):
            m.d.sync += head.word_select(j, bus).eq(resp.payload)
    # each beat-sized group of the entry loads with its own copy of ``have``: not one
    # enable to every bit of the entry
    whole = Cat(head, resp.payload)
    for g, have_g in enumerate(replicated_register(m, platform, have_next, per_entry,
                                                   "have")):
        bits = slice(g * bus, (g + 1) * bus)
        with m.If(resp.valid & at_last & ~have_g):
            m.d.sync += entry[bits].eq(whole[bits])
    return entry


def _staged(m, platform, cfg, resp, per_entry, take, entry_valid, per_region) -> Signal:
    bus = cfg.bus_bits
    entry, have, landing = Signal(per_entry * bus), Signal(), Signal()
    head = Signal(bus * (per_entry - 1))
    beat, payload = Signal(), Signal(bus)
    slot = _next_slot(m, per_entry, beat)
    at_last = slot[-1]
    # (a last beat cannot follow one still landing: an entry has three beats or more)
    m.d.comb += [beat.eq(resp.valid & resp.ready), payload.eq(resp.payload),
                 entry_valid.eq(have)]
    # a last beat taken now lands in the entry next cycle; the entry is whole after that
    have_next = landing | (have & ~take)
    m.d.sync += [landing.eq(beat & at_last), have.eq(have_next)]
    # ready = ~(have & at_last), a flip-flop of its own loaded with next cycle's value:
    # the response FIFO's pointer and level logic (beside the bus) start from it
    ready = Signal(init=1, name="resp_ready")
    at_last_next = Mux(beat, slot[-2], at_last)
    m.d.sync += ready.eq(~(have_next & at_last_next))
    m.d.comb += resp.ready.eq(ready)
    regions = -(-per_entry // per_region)
    beats = replicated_register(m, platform, beat, regions, "beat_q")
    slots = replicated_register(m, platform, slot, regions, "beat_slot", reset=False)
    words = replicated_register(m, platform, payload, regions, "beat_data", reset=False)
    for j in range(per_entry):
        r = j // per_region
        bits = slice(j * bus, (j + 1) * bus)
        if j < per_entry - 1:
            with m.If(beats[r] & slots[r][j]):
                m.d.sync += head.word_select(j, bus).eq(words[r])
            landed = head.word_select(j, bus)
        else:
            landed = words[r]
        with m.If(beats[r] & slots[r][-1]):
            m.d.sync += entry[bits].eq(landed)
    return entry
