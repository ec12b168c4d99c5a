"""The load module: LOADs of the inp and wgt buffers, synchronised by tokens.

Per instruction: pop a c2l token first (pop_next), run the 2-D DMA (inp with zero
padding, wgt without), push an l2c token last (push_next). An entry past its buffer is
latched as the module's error (hw/error_latch.py).
"""
from __future__ import annotations

from amaranth.hdl import Module, Signal
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from vtalab.spec import Config
from vtalab.spec.isa import INSN_BITS, Mem
from vtalab.spec.regs import ERROR_CODE_BITS, ErrorCode

from .dma_reader import DmaReader
from .error_latch import INDEX_BITS, ErrorLatch
from .interfaces import ReadClientSignature, insn_stream
from .isa_layout import isa_layouts
from .sram import entry_bits, wgt_lane_groups, write_signature


def mux_read_clients(m: Module, shared, clients: list, select) -> None:
    """Connect the read client ``clients[select]`` to the ``shared`` port."""
    for index, client in enumerate(clients):
        chosen = select == index
        m.d.comb += [client.resp.payload.eq(shared.resp.payload),
                     client.resp.valid.eq(shared.resp.valid & chosen),
                     client.req.ready.eq(shared.req.ready & chosen)]
        with m.If(chosen):
            m.d.comb += [shared.req.valid.eq(client.req.valid),
                         shared.req.payload.eq(client.req.payload),
                         shared.resp.ready.eq(client.resp.ready)]


class Load(wiring.Component):
    """Takes LOAD inp/wgt instructions from ``insn``; DMA through ``dma``."""

    def __init__(self, cfg: Config):
        self.cfg = cfg
        super().__init__({
            "insn": In(insn_stream()),
            "pop_c2l": Out(1), "has_c2l": In(1), "push_l2c": Out(1),
            "dma": Out(ReadClientSignature(cfg.bus_bits)),
            "inp_write": In(write_signature(entry_bits(cfg, "inp"), cfg.depth("inp"))),
            "wgt_write": In(write_signature(entry_bits(cfg, "wgt"), cfg.depth("wgt"))),
            # the wgt write's enable and address per output lane: copies of the write's
            # registers, one per wgt slice (hw/sram.py wgt_lane_groups), or the write's own
            "wgt_write_copies": Out(data.ArrayLayout(data.StructLayout(
                {"en": 1, "addr": cfg.addr_bits("wgt")}), cfg.block_out)),
            "busy": Out(1), "waiting": Out(1),
            "clear": In(1), "error_code": Out(ERROR_CODE_BITS), "error_index": Out(INDEX_BITS),
        })

    def elaborate(self, platform):
        m = Module()
        cfg = self.cfg
        m.submodules.inp_dma = inp_dma = DmaReader(cfg, "inp", pad=True)
        groups = wgt_lane_groups(cfg, platform)
        m.submodules.wgt_dma = wgt_dma = DmaReader(cfg, "wgt", pad=False, write_copies=groups)
        m.d.comb += [self.wgt_write_copies[j].eq(wgt_dma.write_copies[j % groups])
                     for j in range(cfg.block_out)]
        m.submodules.errors = errors = ErrorLatch()
        m.d.comb += [errors.clear.eq(self.clear),
                     errors.taken.eq(self.insn.valid & self.insn.ready),
                     errors.error.eq(inp_dma.overflow | wgt_dma.overflow),
                     errors.code.eq(ErrorCode.SRAM_RANGE),
                     self.error_code.eq(errors.latched), self.error_index.eq(errors.index)]
        word = Signal(INSN_BITS)
        insn = data.View(isa_layouts(cfg).mem, word)
        is_wgt = Signal()
        mux_read_clients(m, self.dma, [inp_dma.dma, wgt_dma.dma], is_wgt)
        for dma, port in ((inp_dma, self.inp_write), (wgt_dma, self.wgt_write)):
            m.d.comb += [dma.insn.eq(word), port.addr.eq(dma.write.addr),
                         port.data.eq(dma.write.data), port.en.eq(dma.write.en)]
        with m.FSM():
            with m.State("IDLE"):
                m.d.comb += self.insn.ready.eq(1)
                with m.If(self.insn.valid):
                    m.d.sync += word.eq(self.insn.payload)
                    m.next = "TOKENS"
            with m.State("TOKENS"):
                m.d.comb += self.busy.eq(1)
                with m.If(insn.pop_next & ~self.has_c2l):
                    m.d.comb += self.waiting.eq(1)
                with m.Else():
                    m.d.comb += self.pop_c2l.eq(insn.pop_next)
                    m.next = "START"
            with m.State("START"):
                # the DMA starts come from the state register and the instruction alone:
                # the token queue's level never reaches the DMA registers (Fmax)
                m.d.comb += [self.busy.eq(1), inp_dma.start.eq(insn.memory_type == Mem.INP),
                             wgt_dma.start.eq(insn.memory_type == Mem.WGT)]
                m.d.sync += is_wgt.eq(insn.memory_type == Mem.WGT)
                m.next = "RUN"
            with m.State("RUN"):
                m.d.comb += self.busy.eq(1)
                with m.If(~inp_dma.busy & ~wgt_dma.busy):
                    m.next = "PUSH"
            with m.State("PUSH"):
                # the token push from the state register: the DMA's busy (an OR over its
                # counters and the bus) never reaches the token queue (Fmax)
                m.d.comb += [self.busy.eq(1), self.push_l2c.eq(insn.push_next)]
                m.next = "IDLE"
        return m
