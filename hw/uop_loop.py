"""The micro-op loop generator of GEMM and ALU: one (uop index, index offsets) per cycle.

    for i in range(iter_out):
        for j in range(iter_in):
            for u in range(uop_bgn, uop_end):
                emit(u, dst = i*dst_factor_out + j*dst_factor_in, src likewise, wgt likewise)

Offsets are kept as running sums (no multipliers) and wrap at their field widths; legal
programs never wrap, and ``<name>_past`` says an offset wrapped (it is then past every
buffer: the exec pipe flags the micro-op). A loop with no iterations emits nothing, and
neither does a micro-op range past the uop buffer (``uop_end > uop_depth``: the fetch unit
refuses such an instruction before it gets here).
"""
from __future__ import annotations

from amaranth.hdl import Module, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from vtalab.spec import Config
from vtalab.spec.isa import Isa

OFFSETS = ("dst", "src", "wgt")


class UopLoop(wiring.Component):
    """Starts on ``start`` with the loop fields of a GEMM/ALU view; ``busy`` until done."""

    def __init__(self, cfg: Config):
        self.cfg = cfg
        isa = Isa(cfg)
        gemm = isa.gemm
        self.widths = {name: isa.uop[name].width for name in OFFSETS}
        members = {
            "start": In(1),
            "stall": In(1),                 # hold the current element (consumer not ready)
            "uop_bgn": In(gemm["uop_bgn"].width),
            "uop_end": In(gemm["uop_end"].width),
            "iter_out": In(gemm["iter_out"].width),
            "iter_in": In(gemm["iter_in"].width),
            "busy": Out(1),
            "uop_addr": Out(gemm["uop_bgn"].width),
        }
        for name in OFFSETS:
            members[f"{name}_factor_out"] = In(gemm[f"{name}_factor_out"].width)
            members[f"{name}_factor_in"] = In(gemm[f"{name}_factor_in"].width)
            members[f"{name}_offset"] = Out(self.widths[name])
            members[f"{name}_past"] = Out(1)
        super().__init__(members)

    def elaborate(self, platform):
        m = Module()
        i = Signal.like(self.iter_out)
        j = Signal.like(self.iter_in)
        # "at the last value" flags, registered, so that the consumer's late ``stall``
        # meets one LUT in front of the counters' clock enables (Fmax): each flag is set
        # from an equality test against (end - 2) while its counter steps towards the end.
        u_last, j_last, i_last = Signal(), Signal(), Signal()
        u_single, j_single = Signal(), Signal()
        u_end_m2 = Signal.like(self.uop_end)
        i_end_m2 = Signal.like(self.iter_out)
        j_end_m2 = Signal.like(self.iter_in)
        factors = {}
        outer, outer_past = {}, {}
        for name in OFFSETS:
            factors[name] = (Signal(self.widths[name], name=f"{name}_fo"),
                             Signal(self.widths[name], name=f"{name}_fi"))
            outer[name] = Signal(self.widths[name], name=f"{name}_outer")
            outer_past[name] = Signal(name=f"{name}_outer_past")
        empty = ((self.iter_out == 0) | (self.iter_in == 0) | (self.uop_end <= self.uop_bgn)
                 | (self.uop_end > self.cfg.uop_depth))
        one_uop = self.uop_end - 1 == self.uop_bgn
        with m.If(self.start):
            m.d.sync += [
                self.busy.eq(~empty), self.uop_addr.eq(self.uop_bgn), i.eq(0), j.eq(0),
                u_last.eq(one_uop), u_single.eq(one_uop), u_end_m2.eq(self.uop_end - 2),
                j_last.eq(self.iter_in == 1), j_single.eq(self.iter_in == 1),
                j_end_m2.eq(self.iter_in - 2),
                i_last.eq(self.iter_out == 1), i_end_m2.eq(self.iter_out - 2),
            ]
            for name in OFFSETS:
                fo, fi = factors[name]
                m.d.sync += [fo.eq(getattr(self, f"{name}_factor_out")),
                             fi.eq(getattr(self, f"{name}_factor_in")),
                             outer[name].eq(0), getattr(self, f"{name}_offset").eq(0),
                             outer_past[name].eq(0), getattr(self, f"{name}_past").eq(0)]
        with m.Elif(self.busy & ~self.stall):
            with m.If(~u_last):
                m.d.sync += [self.uop_addr.eq(self.uop_addr + 1),
                             u_last.eq(self.uop_addr == u_end_m2)]
            with m.Else():
                m.d.sync += [self.uop_addr.eq(self.uop_bgn), u_last.eq(u_single)]
                with m.If(~j_last):
                    m.d.sync += [j.eq(j + 1), j_last.eq(j == j_end_m2)]
                    for name in OFFSETS:
                        offset = getattr(self, f"{name}_offset")
                        past = getattr(self, f"{name}_past")
                        wide = offset + factors[name][1]          # one bit wider: the carry
                        m.d.sync += [offset.eq(wide), past.eq(past | wide[-1])]
                with m.Elif(~i_last):
                    m.d.sync += [j.eq(0), j_last.eq(j_single), i.eq(i + 1),
                                 i_last.eq(i == i_end_m2)]
                    for name in OFFSETS:
                        new_outer = outer[name] + factors[name][0]
                        now_past = outer_past[name] | new_outer[-1]
                        m.d.sync += [outer[name].eq(new_outer), outer_past[name].eq(now_past),
                                     getattr(self, f"{name}_offset").eq(new_outer),
                                     getattr(self, f"{name}_past").eq(now_past)]
                with m.Else():
                    m.d.sync += self.busy.eq(0)
        return m
