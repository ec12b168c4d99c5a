"""An on-chip SRAM buffer: one write port, any number of synchronous read ports.

Read data appears one cycle after the address (a block RAM's registered read). A read of
the row written in the same cycle returns the old contents; the compute pipeline forwards
in-flight results itself.

The core never uses such a read (the exec pipe forwards over it, the ALU stalls until its
rows are written, and the dependency tokens keep the DMAs and the pipe apart), so a
platform may ask for cheaper memories with ``vtalab_sram_collisions``:

    "undefined"  the memories carry ``vtalab_collision`` for the FPGA build, which tells
                 Yosys that such a read may return anything (no bypass logic between the
                 block RAM and its reader: fpga/build.py)
    "poison"     such a read returns the row inverted (tests: a core whose results do not
                 change under it does not use them)
"""
from __future__ import annotations

from amaranth.hdl import Cat, Module, Mux, Signal, unsigned
from amaranth.lib import data, memory, wiring
from amaranth.lib.wiring import In, Out

from vtalab.spec import Config
from vtalab.spec.errors import ConfigError

from .registers import replicates


COLLISION_MODES = ("old", "undefined", "poison")
#: read ports an "undefined" memory may have (the FPGA build marks 1..this many)
COLLISION_MAX_READ_PORTS = 4
#: the memory attribute an FPGA build turns into Yosys' read-collision "undefined"
COLLISION_ATTR = "vtalab_collision"


def write_signature(width: int, depth: int) -> memory.WritePort.Signature:
    return memory.WritePort.Signature(addr_width=_addr_width(depth), shape=unsigned(width))


def read_signature(width: int, depth: int) -> memory.ReadPort.Signature:
    return memory.ReadPort.Signature(addr_width=_addr_width(depth), shape=unsigned(width))


def _addr_width(depth: int) -> int:
    return max(1, (depth - 1).bit_length())


def entry_bits(cfg: Config, buffer: str) -> int:
    """Bits of one entry of ``buffer``: all elements of a row packed little-endian."""
    return cfg.entry_bytes(buffer) * 8


#: wgt entries this wide or wider are sliced per output lane in the open flow: one address
#: flip-flop would drive 28+ block RAMs, a net across a row of the die (a platform's
#: ``vtalab_wgt_slice_bits`` overrides it)
WGT_SLICE_BITS = 1024


def wgt_lane_groups(cfg: Config, platform=None) -> int:
    """Slices of the wgt buffer (``Sram`` write_slices), each with its own copies of the
    read and write addresses: one per output lane (that lane's block_in weights) for wide
    entries on platforms that replicate flip-flops (hw/registers.replicates: the open
    flow), else one. Slicing may cost a few block RAMs (1x16x8: 32 instead of 29)."""
    wide = entry_bits(cfg, "wgt") >= getattr(platform, "vtalab_wgt_slice_bits", WGT_SLICE_BITS)
    return cfg.block_out if wide and replicates(platform) else 1


class Sram(wiring.Component):
    """``write`` and ``read_<i>`` ports of a ``depth`` x ``width`` memory.

    With ``write_slices`` = n > 1 the memory is n column slices of width / n bits, each
    written through its own port ``write_<k>`` (bits k*width/n and up) and read at its own
    address ``read_<i>_addrs[k]`` (each read port still returns whole rows; its ``addr``
    is unused): a user can then drive each slice's addresses, data and enables from
    copies of its flip-flops placed beside that slice's block RAMs."""

    def __init__(self, width: int, depth: int, read_ports: int = 1, write_slices: int = 1):
        if depth < 2 or depth & (depth - 1):
            raise ConfigError(f"SRAM depth must be a power of two of at least 2, not {depth}")
        if write_slices < 1 or width % write_slices:
            raise ConfigError(f"SRAM write_slices must divide the width {width}, "
                              f"not {write_slices}")
        self.width, self.depth, self.n_read = width, depth, read_ports
        self.slices = write_slices
        slice_bits = width // write_slices
        members = {"write": Out(write_signature(width, depth))} if write_slices == 1 else {
            f"write_{k}": Out(write_signature(slice_bits, depth)) for k in range(write_slices)}
        for i in range(read_ports):
            members[f"read_{i}"] = Out(read_signature(width, depth))
            if write_slices > 1:
                members[f"read_{i}_addrs"] = In(data.ArrayLayout(_addr_width(depth),
                                                                 write_slices))
        super().__init__(members)

    @classmethod
    def for_buffer(cls, cfg: Config, buffer: str, read_ports: int = 1,
                   write_slices: int = 1) -> "Sram":
        return cls(entry_bits(cfg, buffer), cfg.depth(buffer), read_ports, write_slices)

    def read_port(self, index: int = 0):
        return getattr(self, f"read_{index}")

    def write_ports(self) -> list:
        """The write port of each slice, lowest bits first (``[write]`` when unsliced)."""
        if self.slices == 1:
            return [self.write]
        return [getattr(self, f"write_{k}") for k in range(self.slices)]

    def elaborate(self, platform):
        m = Module()
        collisions = getattr(platform, "vtalab_sram_collisions", "old")
        if collisions not in COLLISION_MODES:
            raise ConfigError(f"vtalab_sram_collisions must be one of {COLLISION_MODES}, "
                              f"not {collisions!r}")
        if collisions == "undefined" and self.n_read > COLLISION_MAX_READ_PORTS:
            raise ConfigError(f"an SRAM with undefined read collisions must have at most "
                              f"{COLLISION_MAX_READ_PORTS} read ports, not {self.n_read}")
        attrs = {COLLISION_ATTR: "undefined"} if collisions == "undefined" else None
        datas = [[] for _ in range(self.n_read)]
        for k, write in enumerate(self.write_ports()):
            mem = memory.Memory(shape=unsigned(len(write.data)), depth=self.depth, init=[],
                                attrs=attrs)
            m.submodules["mem" if self.slices == 1 else f"mem_{k}"] = mem
            self._ports(m, mem, write, collisions, datas, k)
        for i, parts in enumerate(datas):
            m.d.comb += self.read_port(i).data.eq(Cat(*parts))
        return m

    def _ports(self, m, mem, write, collisions, datas, k) -> None:
        wport = mem.write_port()
        m.d.comb += [wport.addr.eq(write.addr), wport.data.eq(write.data),
                     wport.en.eq(write.en)]
        for i in range(self.n_read):
            rport = mem.read_port()
            ours = self.read_port(i)
            addr = ours.addr if self.slices == 1 else getattr(self, f"read_{i}_addrs")[k]
            m.d.comb += [rport.addr.eq(addr), rport.en.eq(ours.en)]
            if collisions == "poison":
                collided = Signal(name=f"collided_{i}_{k}")
                with m.If(ours.en):
                    m.d.sync += collided.eq(write.en & (write.addr == addr))
                datas[i].append(Mux(collided, ~rport.data, rport.data))
            else:
                datas[i].append(rport.data)
