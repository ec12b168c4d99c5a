"""Test-only top levels that expose internal components' ports to cocotb."""
from __future__ import annotations

from amaranth.hdl import Module
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from vtalab.hw.alu import AluCore
from vtalab.hw.axi_master import AxiMaster
from vtalab.hw.gemm import GemmCore
from vtalab.hw.interfaces import AxiSignature, ReadClientSignature, WriteClientSignature
from vtalab.hw.load import Load
from vtalab.hw.token_queue import TokenQueue


def expose(m: Module, top, prefix: str, sub, skip=()) -> None:
    """Connect every member of ``sub`` (except ``skip``) to ``top.<prefix>_<name>``."""
    for name, member in sub.signature.members.items():
        if name in skip:
            continue
        ours, theirs = getattr(top, f"{prefix}_{name}"), getattr(sub, name)
        if member.is_signature:
            wiring.connect(m, wiring.flipped(ours), theirs)
        elif member.flow is In:
            m.d.comb += theirs.eq(ours)
        else:
            m.d.comb += ours.eq(theirs)


def members_of(prefix: str, sub, skip=()) -> dict:
    return {f"{prefix}_{name}": member for name, member in sub.signature.members.items()
            if name not in skip}


class ModulesTop(wiring.Component):
    """One build for the module benches: the load module on read client 0 of an AXI
    master whose clients 1, 2 and write client the bench drives, plus the GEMM and ALU
    datapaths and a token queue side by side."""

    def __init__(self, cfg):
        self.cfg = cfg
        self.load = Load(cfg)
        self.parts = {"gemm": GemmCore(cfg), "alu": AluCore(cfg), "queue": TokenQueue(depth=4)}
        members = members_of("load", self.load, skip=("dma",))
        for prefix, part in self.parts.items():
            members.update(members_of(prefix, part))
        members.update({
            "axi": Out(AxiSignature(cfg.bus_bits)),
            "read_1": In(ReadClientSignature(cfg.bus_bits)),
            "read_2": In(ReadClientSignature(cfg.bus_bits)),
            "write": In(WriteClientSignature(cfg.bus_bits)),
        })
        super().__init__(members)

    def elaborate(self, platform):
        m = Module()
        m.submodules.load = self.load
        for prefix, part in self.parts.items():
            m.submodules[prefix] = part
            expose(m, self, prefix, part)
        m.submodules.master = master = AxiMaster(self.cfg, n_read=3)
        expose(m, self, "load", self.load, skip=("dma",))
        wiring.connect(m, self.load.dma, master.read_0)
        wiring.connect(m, wiring.flipped(self.axi), master.axi)
        for name in ("read_1", "read_2", "write"):
            wiring.connect(m, wiring.flipped(getattr(self, name)), getattr(master, name))
        return m
