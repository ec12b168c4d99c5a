"""The GEMM datapath: one accumulator row update per cycle (combinational).

``result[b][o] = acc[b][o] + sum_i inp[b][i] * wgt[o][i]``, wrapped to acc_bits: a
BATCH x BLOCK_IN x BLOCK_OUT array of multiply-accumulates with balanced adder trees.
Entries are packed little-endian, element k of an entry at bits k*elem_bits (row-major
over the entry's shape), exactly as they sit in DRAM.
"""
from __future__ import annotations

from amaranth.hdl import Module, signed
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from vtalab.spec import Config

from .sram import entry_bits


def element_view(cfg: Config, buffer: str, value) -> data.View:
    """A flat array view of an entry's elements (signed, cfg.elem_bits(buffer) each)."""
    count = cfg.entry_bytes(buffer) * 8 // cfg.elem_bits(buffer)
    return data.View(data.ArrayLayout(signed(cfg.elem_bits(buffer)), count), value)


def tree_sum(values: list, wrap_bits: int | None = None):
    """Sum of values as a balanced tree (short logic depth, no deep chains); with
    ``wrap_bits`` every sum keeps only that many low bits (modulo arithmetic)."""
    def add(a, b):
        return a + b if wrap_bits is None else (a + b)[:wrap_bits]
    values = list(values)
    while len(values) > 1:
        paired = [add(values[k], values[k + 1]) for k in range(0, len(values) - 1, 2)]
        if len(values) % 2:
            paired.append(values[-1])
        values = paired
    return values[0]


class GemmCore(wiring.Component):
    """``result = acc + inp x wgt^T`` for one (inp, wgt, acc) entry triple."""

    def __init__(self, cfg: Config):
        self.cfg = cfg
        super().__init__({
            "inp": In(entry_bits(cfg, "inp")),
            "wgt": In(entry_bits(cfg, "wgt")),
            "acc": In(entry_bits(cfg, "acc")),
            "result": Out(entry_bits(cfg, "acc")),
        })

    def elaborate(self, platform):
        m = Module()
        cfg = self.cfg
        inp = element_view(cfg, "inp", self.inp)
        wgt = element_view(cfg, "wgt", self.wgt)
        acc = element_view(cfg, "acc", self.acc)
        result = element_view(cfg, "acc", self.result)
        for b in range(cfg.batch):
            for o in range(cfg.block_out):
                products = [inp[b * cfg.block_in + i] * wgt[o * cfg.block_in + i]
                            for i in range(cfg.block_in)]
                total = acc[b * cfg.block_out + o] + tree_sum(products)
                m.d.comb += result[b * cfg.block_out + o].eq(total[:cfg.acc_bits])
        return m
