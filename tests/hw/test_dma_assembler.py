# amaranth: UnusedElaboratable=no
"""hw/dma_assembler: entries assembled from response beats, in order and whole, under random
response valid and a writer that holds an entry for many cycles (as it does while it
writes pad entries); the staged form (entries of three beats or more) loses no beat
cycle when beats arrive back to back and the writer takes each entry at once, and its
extra cycle is the one spec/timing.py charges."""
import random
from types import SimpleNamespace

import pytest
from amaranth.hdl import Module, Signal
from amaranth.sim import Simulator

from vtalab.hw.dma_assembler import assembled_entries
from vtalab.spec import Config, preset
from vtalab.spec.timing import BEAT_STAGE_BEATS, DMA_BEAT_STAGE, DMA_UNPACK_REGISTER

BUS = 64


def _copies_platform():
    """Copies per group as in the open flow, as plain registers (no ECP5 cells)."""
    return SimpleNamespace(vtalab_lane_groups=True)


def _build(per_entry: int, platform, slices: int = 1):
    cfg = Config.from_dict(dict(preset("tiny").hardware_dict(), bus_bits=BUS))
    resp = SimpleNamespace(valid=Signal(), ready=Signal(), payload=Signal(BUS))
    take, entry_valid = Signal(), Signal()
    m = Module()
    entry = assembled_entries(m, platform, cfg, resp, per_entry * BUS // 8, take, entry_valid,
                              slices)
    return m, resp, take, entry_valid, entry


def _run(per_entry, platform, cycles, offer, taking, slices=1):
    """Beats numbered 1, 2, ... offered when ``offer(rng)``; entry_valid taken when
    ``taking(rng)``. Returns (entries taken as beat lists, cycle of each take)."""
    m, resp, take, entry_valid, entry = _build(per_entry, platform, slices)
    taken, when = [], []

    async def bench(ctx):
        rng, beat = random.Random(per_entry), 1
        for cycle in range(cycles):
            ctx.set(resp.valid, offer(rng))
            ctx.set(resp.payload, beat)
            ctx.set(take, ctx.get(entry_valid) and taking(rng))
            if ctx.get(take):
                value = ctx.get(entry)
                taken.append([value >> (BUS * k) & (2 ** BUS - 1) for k in range(per_entry)])
                when.append(cycle)
            if ctx.get(resp.valid) and ctx.get(resp.ready):
                beat += 1
            await ctx.tick()

    sim = Simulator(m)
    sim.add_clock(1e-6)
    sim.add_testbench(bench)
    sim.run()
    return taken, when


@pytest.mark.parametrize("per_entry", [1, 2, 3, 4, 5, 8, 16])
@pytest.mark.parametrize("copies,slices", [(False, 1), (True, 1), (True, 8)])
def test_entries_come_whole_and_in_order_under_random_valid_and_long_holds(per_entry,
                                                                            copies, slices):
    """``slices`` = 8: a region per SRAM slice (16 beats: 2 each; 4 and 8: one beat each;
    3 and 5 do not split at beats: REGION_BEATS)."""
    def holding(rng):                  # mostly at once, sometimes held for pads
        return rng.random() < (0.9 if rng.random() < 0.7 else 0.05)
    taken, _ = _run(per_entry, _copies_platform() if copies else None, 1500,
                    lambda rng: rng.random() < 0.6, holding, slices)
    want = [list(range(1 + k * per_entry, 1 + (k + 1) * per_entry)) for k in range(len(taken))]
    assert taken == want
    assert len(taken) * per_entry > 150          # both sides exercised


@pytest.mark.parametrize("per_entry", [3, 4, 8, 16])
@pytest.mark.parametrize("slices", [1, 8])
def test_the_staged_form_keeps_one_beat_per_cycle(per_entry, slices):
    taken, when = _run(per_entry, _copies_platform(), 40 * per_entry,
                       lambda rng: True, lambda rng: True, slices)
    assert per_entry >= BEAT_STAGE_BEATS
    # the first entry whole after its beats, the unpack register and the stage; then one
    # entry per per_entry cycles
    assert when[0] == per_entry - 1 + DMA_UNPACK_REGISTER + DMA_BEAT_STAGE
    assert all(b - a == per_entry for a, b in zip(when, when[1:]))
    assert taken[1] == list(range(per_entry + 1, 2 * per_entry + 1))


def test_two_beat_entries_take_no_stage():
    _, when = _run(2, _copies_platform(), 60, lambda rng: True, lambda rng: True)
    assert when[0] == 2 - 1 + DMA_UNPACK_REGISTER
    assert all(b - a == 2 for a, b in zip(when, when[1:]))

