"""Signatures shared by the components: AXI4 / AXI4-Lite buses, DMA clients, insn streams.

All signatures are written from the initiator's side (``Out`` = driven by the master).
"""
from __future__ import annotations

from amaranth.hdl import unsigned
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

ADDR_BITS = 32          # DRAM byte addresses on the AXI bus
BEATS_BITS = 24         # beats of one DMA request (a whole row: up to 64 Ki entries)
AXI_MAX_BEATS = 256     # AXI4 INCR burst limit
AXI_BOUNDARY = 4096     # bursts never cross a 4 KiB boundary
AXI_BURST_INCR = 1


def request_layout() -> data.StructLayout:
    """A DMA request: bus-aligned byte address and number of bus beats."""
    return data.StructLayout({"addr": unsigned(ADDR_BITS), "beats": unsigned(BEATS_BITS)})


def write_beat_layout(bus_bits: int) -> data.StructLayout:
    return data.StructLayout({"data": unsigned(bus_bits), "strb": unsigned(bus_bits // 8)})


class ReadClientSignature(wiring.Signature):
    """A read DMA client: requests (addr, beats) out, beats of read data in, in order."""

    def __init__(self, bus_bits: int):
        self.bus_bits = bus_bits
        super().__init__({
            "req": Out(stream.Signature(request_layout())),
            "resp": In(stream.Signature(unsigned(bus_bits))),
        })


class WriteClientSignature(wiring.Signature):
    """A write DMA client: requests and data beats out; ``idle`` once all writes are acked."""

    def __init__(self, bus_bits: int):
        self.bus_bits = bus_bits
        super().__init__({
            "req": Out(stream.Signature(request_layout())),
            "data": Out(stream.Signature(write_beat_layout(bus_bits))),
            "idle": In(1),
        })


class AxiSignature(wiring.Signature):
    """AXI4 master (one ID, INCR bursts), flat member names as in the AXI specification."""

    def __init__(self, bus_bits: int, addr_bits: int = ADDR_BITS):
        self.bus_bits = bus_bits
        self.addr_bits = addr_bits
        super().__init__({
            "awaddr": Out(addr_bits), "awlen": Out(8), "awsize": Out(3), "awburst": Out(2),
            "awvalid": Out(1), "awready": In(1),
            "wdata": Out(bus_bits), "wstrb": Out(bus_bits // 8), "wlast": Out(1),
            "wvalid": Out(1), "wready": In(1),
            "bresp": In(2), "bvalid": In(1), "bready": Out(1),
            "araddr": Out(addr_bits), "arlen": Out(8), "arsize": Out(3), "arburst": Out(2),
            "arvalid": Out(1), "arready": In(1),
            "rdata": In(bus_bits), "rresp": In(2), "rlast": In(1),
            "rvalid": In(1), "rready": Out(1),
        })


class AxiLiteSignature(wiring.Signature):
    """AXI4-Lite, 32-bit data, from the master's side."""

    def __init__(self, addr_bits: int):
        self.addr_bits = addr_bits
        super().__init__({
            "awaddr": Out(addr_bits), "awvalid": Out(1), "awready": In(1),
            "wdata": Out(32), "wstrb": Out(4), "wvalid": Out(1), "wready": In(1),
            "bresp": In(2), "bvalid": In(1), "bready": Out(1),
            "araddr": Out(addr_bits), "arvalid": Out(1), "arready": In(1),
            "rdata": In(32), "rresp": In(2), "rvalid": In(1), "rready": Out(1),
        })


def insn_stream() -> stream.Signature:
    from .isa_layout import INSN_BITS
    return stream.Signature(unsigned(INSN_BITS))
