"""The ALU lanes' shifter (SHR, SAT) with its direction and distance registered per slice.

Each level of a barrel shifter selects on one bit of the distance for every output bit:
as one register, a distance bit drives twice the lane's width of muxes (64 at 32 bits),
and on the 1x16x4/1x16x8 heap builds that net took 5.5 ns to reach a LUT in the next
tile (the ALU select, the slowest input). In the open FPGA flow the direction and the
distance are therefore registered once per ``SHIFT_SLICE`` output bits (TRELLIS_FF
copies, hw/registers.py), and the shifter is written bit by bit so that each output
bit's muxes select on its slice's copy. Elsewhere one register and the word-level
shift, the same function.
"""
from __future__ import annotations

from amaranth.hdl import Cat, Mux, Signal

from .registers import enabled_register, replicated_register, replicates

#: output bits per copy of a lane's shift direction and distance
SHIFT_SLICE = 8


def shift_controls(m, platform, left, dist, enable, bits: int, name: str) -> list:
    """``Cat(dist, left)`` registered (loaded when ``enable``): one register, or in the
    open FPGA flow one copy per SHIFT_SLICE of the ``bits`` output bits."""
    value = Signal(len(dist) + 1, name=f"{name}_d")
    m.d.comb += value.eq(Cat(dist, left))
    if not replicates(platform):
        return [enabled_register(m, value, enable, name)]
    copies = -(-bits // SHIFT_SLICE)
    return replicated_register(m, platform, value, copies, name, enable=enable, reset=False)


def shifted(v, controls: list):
    """``v`` (signed) shifted left (zeros in) or right (the sign in) by the distance of
    :func:`shift_controls`, its bits wrapped to ``v``'s width."""
    if len(controls) == 1:
        dist, left = controls[0][:-1], controls[0][-1]
        return Mux(left, (v << dist)[:len(v)], v >> dist)
    width, levels = len(v), len(controls[0]) - 1
    control = [controls[i // SHIFT_SLICE] for i in range(width)]
    right, left = [v[i] for i in range(width)], [v[i] for i in range(width)]
    for j in range(levels):
        step = 1 << j
        right = [Mux(control[i][j], right[i + step] if i + step < width else v[-1], right[i])
                 for i in range(width)]
        left = [Mux(control[i][j], left[i - step] if i >= step else 0, left[i])
                for i in range(width)]
    return Cat(*(Mux(control[i][-1], left[i], right[i]) for i in range(width))).as_signed()
