"""The store module: STOREs from the out buffer to DRAM, synchronised by tokens.

Per instruction: pop a c2s token first (pop_prev), run the 2-D DMA and wait until DRAM
acknowledged every write, push an s2c token last (push_prev). An entry past the out
buffer is latched as the module's error (hw/error_latch.py).
"""
from __future__ import annotations

from amaranth.hdl import Module, Signal
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from vtalab.spec import Config
from vtalab.spec.isa import INSN_BITS
from vtalab.spec.regs import ERROR_CODE_BITS, ErrorCode

from .dma_writer import DmaWriter
from .error_latch import INDEX_BITS, ErrorLatch
from .interfaces import WriteClientSignature, insn_stream
from .isa_layout import isa_layouts
from .sram import entry_bits, read_signature


class Store(wiring.Component):
    """Takes STORE instructions from ``insn``; reads ``out_read``, writes through ``dma``."""

    def __init__(self, cfg: Config):
        self.cfg = cfg
        super().__init__({
            "insn": In(insn_stream()),
            "pop_c2s": Out(1), "has_c2s": In(1), "push_s2c": Out(1),
            "dma": Out(WriteClientSignature(cfg.bus_bits)),
            "out_read": In(read_signature(entry_bits(cfg, "out"), cfg.depth("out"))),
            "busy": Out(1), "waiting": Out(1),
            "clear": In(1), "error_code": Out(ERROR_CODE_BITS), "error_index": Out(INDEX_BITS),
        })

    def elaborate(self, platform):
        m = Module()
        m.submodules.dma = dma = DmaWriter(self.cfg, "out")
        m.submodules.errors = errors = ErrorLatch()
        m.d.comb += [errors.clear.eq(self.clear),
                     errors.taken.eq(self.insn.valid & self.insn.ready),
                     errors.error.eq(dma.overflow), errors.code.eq(ErrorCode.SRAM_RANGE),
                     self.error_code.eq(errors.latched), self.error_index.eq(errors.index)]
        word = Signal(INSN_BITS)
        insn = data.View(isa_layouts(self.cfg).mem, word)
        wiring.connect(m, wiring.flipped(self.dma), dma.dma)
        m.d.comb += [dma.insn.eq(word), self.out_read.addr.eq(dma.read.addr),
                     self.out_read.en.eq(dma.read.en), dma.read.data.eq(self.out_read.data)]
        with m.FSM():
            with m.State("IDLE"):
                m.d.comb += self.insn.ready.eq(1)
                with m.If(self.insn.valid):
                    m.d.sync += word.eq(self.insn.payload)
                    m.next = "TOKENS"
            with m.State("TOKENS"):
                m.d.comb += self.busy.eq(1)
                with m.If(insn.pop_prev & ~self.has_c2s):
                    m.d.comb += self.waiting.eq(1)
                with m.Else():
                    m.d.comb += self.pop_c2s.eq(insn.pop_prev)
                    m.next = "START"
            with m.State("START"):
                # as in Load: the DMA start from the state register alone (Fmax)
                m.d.comb += [self.busy.eq(1), dma.start.eq(1)]
                m.next = "RUN"
            with m.State("RUN"):
                m.d.comb += self.busy.eq(1)
                with m.If(~dma.busy):
                    m.next = "PUSH"
            with m.State("PUSH"):
                # the token push from the state register: the DMA's busy (an OR over its
                # counters and the bus) never reaches the token queue (Fmax)
                m.d.comb += [self.busy.eq(1), self.push_s2c.eq(insn.push_prev)]
                m.next = "IDLE"
        return m
