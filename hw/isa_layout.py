"""Amaranth views of the ISA, built from spec/isa.py's Layouts (the only place bits live).

Nothing in hw/ writes a bit position by hand: every instruction and micro-op field is
reached through the `amaranth.lib.data` layouts built here from the spec's `Field`s.
"""
from __future__ import annotations

from functools import lru_cache

from amaranth.hdl import signed, unsigned
from amaranth.lib import data

from vtalab.spec import Config
from vtalab.spec.isa import INSN_BITS, UOP_BITS, Isa, Layout

__all__ = ["INSN_BITS", "UOP_BITS", "to_data_layout", "IsaLayouts", "isa_layouts"]


def to_data_layout(layout: Layout) -> data.FlexibleLayout:
    """A FlexibleLayout with one field per spec field, at the spec's offset and width."""
    fields = {}
    for fld in layout.fields:
        shape = signed(fld.width) if fld.signed else unsigned(fld.width)
        fields[fld.name] = data.Field(shape, fld.lsb)
    return data.FlexibleLayout(layout.width, fields)


class IsaLayouts:
    """The data layouts of one Config's instruction set: views of a 128-bit word."""

    def __init__(self, cfg: Config):
        isa = Isa(cfg)
        self.cfg = cfg
        self.mem = to_data_layout(isa.mem)
        self.gemm = to_data_layout(isa.gemm)
        self.alu = to_data_layout(isa.alu)
        self.finish = to_data_layout(isa.finish)
        self.uop = to_data_layout(isa.uop)

    def views(self, word):
        """(mem, gemm, alu) views of one instruction word (a Value of INSN_BITS bits)."""
        return (data.View(self.mem, word), data.View(self.gemm, word),
                data.View(self.alu, word))


@lru_cache(maxsize=16)
def isa_layouts(cfg: Config) -> IsaLayouts:
    return IsaLayouts(cfg)
