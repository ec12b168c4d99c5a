"""Edits of the LPF constraints Amaranth writes for the open flow.

``with_timing_margin``: nextpnr derives the PLL output's clock constraint from the input
pin's (input x CLKFB_DIV / CLKI_DIV), so scaling every ``FREQUENCY PORT`` line times the
whole design for a faster clock while the PLL still makes the preset's. A ``FREQUENCY NET``
on the PLL output would name one of the net's aliases, and nextpnr 0.11 ignores
constraints on aliases ("net 'pll.clkop' does not exist in design").
"""
from __future__ import annotations

import re

from .errors import FpgaError

_PORT_FREQUENCY = re.compile(r'^(FREQUENCY PORT "[^"]+") ([0-9.eE+-]+) HZ;$', re.MULTILINE)


def with_timing_margin(lpf: str, margin: float) -> str:
    """``lpf`` with every input clock ``1 + margin`` times faster."""
    if not _PORT_FREQUENCY.search(lpf):
        raise FpgaError("the LPF must constrain an input clock (FREQUENCY PORT ... HZ;) for "
                        "a timing margin, not have none")
    return _PORT_FREQUENCY.sub(
        lambda m: f"{m.group(1)} {float(m.group(2)) * (1.0 + margin):.1f} HZ;", lpf)
