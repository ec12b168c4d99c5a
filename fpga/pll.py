"""The ECP5 PLL (EHXPLLL) that makes the core clock from the board oscillator.

``pll_params`` searches the divider space the way Lattice's ``ecppll`` does: the phase
detector runs at 3.125-400 MHz, the VCO at 400-800 MHz, and the feedback comes from CLKOP.
"""
from __future__ import annotations

from dataclasses import dataclass

from amaranth.hdl import (ClockDomain, ClockSignal, Elaboratable, Instance, Module,
                          ResetSignal, Signal)

from .errors import FpgaError

PFD_MHZ = (3.125, 400.0)
VCO_MHZ = (400.0, 800.0)
OUT_MHZ = (3.125, 400.0)


@dataclass(frozen=True)
class PllParams:
    clki_div: int
    clkfb_div: int
    clkop_div: int
    in_mhz: float
    out_mhz: float             # achieved output frequency

    @property
    def vco_mhz(self) -> float:
        return self.out_mhz * self.clkop_div


def pll_params(in_mhz: float, out_mhz: float) -> PllParams:
    """Dividers whose output is closest to ``out_mhz`` (ties: highest VCO, lowest jitter)."""
    if not OUT_MHZ[0] <= out_mhz <= OUT_MHZ[1]:
        raise FpgaError(f"PLL output must be {OUT_MHZ[0]}..{OUT_MHZ[1]} MHz, not {out_mhz}")
    best = None
    for clki_div in range(1, 129):
        pfd = in_mhz / clki_div
        if not PFD_MHZ[0] <= pfd <= PFD_MHZ[1]:
            continue
        for clkfb_div in range(1, 81):
            fout = pfd * clkfb_div
            for clkop_div in range(1, 129):
                vco = fout * clkop_div
                if not VCO_MHZ[0] <= vco <= VCO_MHZ[1]:
                    continue
                key = (abs(fout - out_mhz), -vco)
                if best is None or key < best[0]:
                    best = (key, PllParams(clki_div, clkfb_div, clkop_div, in_mhz, fout))
    if best is None:
        raise FpgaError(f"PLL output must be reachable from {in_mhz} MHz, not {out_mhz} MHz")
    return best[1]


class Ecp5Pll(Elaboratable):
    """Drives the clock and reset of domain ``domain`` (which the parent defines) from
    ``clk_in``; the reset holds until the PLL has locked."""

    def __init__(self, clk_in, params: PllParams, domain: str = "sync",
                 global_reset: bool = True):
        self.clk_in = clk_in
        self.params = params
        self.domain = domain
        self.global_reset = global_reset
        self.locked = Signal()

    def elaborate(self, platform):
        m = Module()
        p = self.params
        clk_out = ClockSignal(self.domain)
        m.submodules.pll = Instance(
            "EHXPLLL",
            p_PLLRST_ENA="DISABLED", p_INTFB_WAKE="DISABLED", p_STDBY_ENABLE="DISABLED",
            p_DPHASE_SOURCE="DISABLED", p_OUTDIVIDER_MUXA="DIVA",
            p_CLKI_DIV=p.clki_div, p_CLKFB_DIV=p.clkfb_div, p_FEEDBK_PATH="CLKOP",
            p_CLKOP_ENABLE="ENABLED", p_CLKOP_DIV=p.clkop_div,
            p_CLKOP_CPHASE=p.clkop_div - 1, p_CLKOP_FPHASE=0,
            a_FREQUENCY_PIN_CLKI=f"{p.in_mhz:g}", a_FREQUENCY_PIN_CLKOP=f"{p.out_mhz:g}",
            a_ICP_CURRENT="12", a_LPF_RESISTOR="8", a_MFG_ENABLE_FILTEROPAMP="1",
            a_MFG_GMCREF_SEL="2",
            i_CLKI=self.clk_in, i_CLKFB=clk_out, i_RST=0, i_STDBY=0,
            i_PHASESEL0=0, i_PHASESEL1=0, i_PHASEDIR=0, i_PHASESTEP=0, i_PHASELOADREG=0,
            i_PLLWAKESYNC=0, i_ENCLKOP=0,
            o_CLKOP=clk_out, o_LOCK=self.locked,
        )
        # Reset released a few cycles after lock, counted in a reset-less domain.
        m.domains.pll_por = ClockDomain("pll_por", reset_less=True, local=True)
        m.d.comb += ClockSignal("pll_por").eq(clk_out)
        settle = Signal(4)
        reset = Signal(init=1)                  # a flip-flop drives the reset net
        # ... through a DCCA onto a primary clock network: nextpnr times the release at
        # every LSR pin, and in the fabric the net to thousands of them took 10.4 ns
        if self.global_reset:
            global_reset = Signal()
            m.submodules.reset_buffer = Instance("DCCA", i_CLKI=reset, i_CE=1,
                                                 o_CLKO=global_reset)
            m.d.comb += ResetSignal(self.domain).eq(global_reset)
        else:
            m.d.comb += ResetSignal(self.domain).eq(reset)
        m.d.pll_por += reset.eq(~settle[-1])
        with m.If(~self.locked):
            m.d.pll_por += settle.eq(0)
        with m.Elif(~settle[-1]):
            m.d.pll_por += settle.eq(settle + 1)
        return m
