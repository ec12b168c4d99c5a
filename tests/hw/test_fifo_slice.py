# amaranth: UnusedElaboratable=no
"""hw/channel_slices.FifoSlice: the registered form (head entry in an output register, every
entry written to the LUT RAM) behaves cycle for cycle like the plain LUT-RAM FIFO: same
valid, ready and data under random traffic on both sides, so the cycle models
(spec/timing.py AXI_RESPONSE_SLICE) hold for either."""
import random

import pytest
from amaranth.hdl import Module
from amaranth.sim import Simulator

from vtalab.hw.channel_slices import FifoSlice
from vtalab.spec.errors import ConfigError


@pytest.mark.parametrize("depth", [2, 3, 4, 8])
def test_the_registered_fifo_slice_matches_the_plain_one_every_cycle(depth):
    m = Module()
    m.submodules.plain = plain = FifoSlice(8, depth)
    m.submodules.registered = registered = FifoSlice(8, depth, registered=True)
    m.d.comb += [registered.i_valid.eq(plain.i_valid), registered.i_data.eq(plain.i_data),
                 registered.o_ready.eq(plain.o_ready)]
    seen = {"full": 0, "beats": 0}

    async def traffic(ctx):
        rng = random.Random(depth)
        for _ in range(3000):
            ctx.set(plain.i_valid, rng.random() < 0.6)
            ctx.set(plain.i_data, rng.randrange(256))
            ctx.set(plain.o_ready, rng.random() < 0.45)
            for a, b in ((plain.o_valid, registered.o_valid),
                         (plain.i_ready, registered.i_ready)):
                assert ctx.get(a) == ctx.get(b)
            if ctx.get(plain.o_valid):
                assert ctx.get(plain.o_data) == ctx.get(registered.o_data)
                seen["beats"] += ctx.get(plain.o_ready)
            seen["full"] += not ctx.get(plain.i_ready)
            await ctx.tick()

    sim = Simulator(m)
    sim.add_clock(1e-6)
    sim.add_testbench(traffic)
    sim.run()
    assert seen["full"] > 50 and seen["beats"] > 500        # both sides got exercised


def test_a_registered_fifo_slice_needs_room_behind_its_output_register():
    with pytest.raises(ConfigError, match="depth must be at least 2 with registered, not 1"):
        FifoSlice(8, 1, registered=True)
    with pytest.raises(ConfigError, match="depth must be at least 1 without registered, not 0"):
        FifoSlice(8, 0)
