"""The open-flow board's host path in Amaranth's simulator: UART frames -> bridge ->
control registers (hw.control) and the on-chip AXI DRAM, plus AXI bursts into the DRAM."""
import struct
from types import SimpleNamespace

import pytest

amaranth = pytest.importorskip("amaranth")

from amaranth.hdl import Fragment, Module  # noqa: E402
from amaranth.lib import wiring  # noqa: E402
from amaranth.sim import Simulator  # noqa: E402

from vtalab.fpga.axi_ram import AxiRam  # noqa: E402
from vtalab.fpga.uart_bridge import UartBridge  # noqa: E402
from vtalab.hw.control import ControlRegs  # noqa: E402
from vtalab.spec import preset  # noqa: E402
from vtalab.spec.regs import register  # noqa: E402

DIVISOR = 4
#: None: one memory; the open flow's platform: a memory per byte lane, each with its own
#: copies of the read and write addresses (fpga/axi_ram.py)
PLATFORMS = [None, SimpleNamespace(vtalab_lane_groups=True)]


class HostPath(wiring.Component):
    def __init__(self, cfg):
        self.cfg = cfg
        super().__init__({"rx": wiring.In(1, init=1), "tx": wiring.Out(1, init=1)})

    def elaborate(self, platform):
        m = Module()
        m.submodules.bridge = bridge = UartBridge(DIVISOR)
        m.submodules.regs = regs = ControlRegs(self.cfg)
        m.submodules.ram = self.ram = ram = AxiRam(self.cfg.bus_bits, 1024)
        wiring.connect(m, bridge.ctrl, regs.bus)
        wiring.connect(m, bridge.mem, ram.host)
        m.d.comb += [bridge.rx.eq(self.rx), self.tx.eq(bridge.tx)]
        return m


async def send_byte(ctx, dut, value):
    for bit in [0] + [value >> k & 1 for k in range(8)] + [1]:
        ctx.set(dut.rx, bit)
        await ctx.tick().repeat(DIVISOR)


async def recv_byte(ctx, dut):
    while ctx.get(dut.tx):
        await ctx.tick()
    await ctx.tick().repeat(DIVISOR + DIVISOR // 2)      # middle of data bit 0
    value = 0
    for k in range(8):
        value |= ctx.get(dut.tx) << k
        await ctx.tick().repeat(DIVISOR)
    return value


async def transact(ctx, dut, cmd, addr, data=0):
    for byte in struct.pack("<BII", ord(cmd), addr, data):
        await send_byte(ctx, dut, byte)
    reply = bytes([await recv_byte(ctx, dut) for _ in range(4)])
    return struct.unpack("<I", reply)[0]


def run(dut, bench, platform=None):
    sim = Simulator(Fragment.get(dut, platform))
    sim.add_clock(1e-6)
    sim.add_testbench(bench)
    sim.run()


@pytest.mark.parametrize("platform", PLATFORMS)
def test_uart_bridge_reaches_registers_and_memory(platform):
    cfg = preset("tiny")
    dut = HostPath(cfg)
    seen = {}

    async def bench(ctx):
        seen["config_id"] = await transact(ctx, dut, "r", register("config_id").offset)
        seen["write"] = await transact(ctx, dut, "w", register("scratch").offset,
                                       0xA5A5_1234)
        seen["scratch"] = await transact(ctx, dut, "r", register("scratch").offset)
        seen["mem_write"] = await transact(ctx, dut, "W", 0x40, 0x1122_3344)
        await transact(ctx, dut, "W", 0x44, 0x5566_7788)
        seen["mem"] = [await transact(ctx, dut, "R", a) for a in (0x44, 0x40)]
        seen["unknown"] = await transact(ctx, dut, "x", 0x40, 0)

    run(dut, bench, platform)
    assert seen["config_id"] == cfg.config_id
    assert seen["write"] == 0 and seen["mem_write"] == 0         # OKAY / done
    assert seen["unknown"] == 0xFFFF_FFFF
    assert seen["scratch"] == 0xA5A5_1234
    assert seen["mem"] == [0x5566_7788, 0x1122_3344]


@pytest.mark.parametrize("platform", PLATFORMS)
def test_axi_ram_burst_write_then_read_with_backpressure(platform):
    ram = AxiRam(64, 1024)
    beats = [0x0101_0101_0101_0101 * (k + 1) for k in range(24)]
    got = []

    async def bench(ctx):
        axi = ram.axi
        ctx.set(axi.awaddr, 0x80)
        ctx.set(axi.awlen, len(beats) - 1)
        ctx.set(axi.awvalid, 1)
        await ctx.tick().until(axi.awready)
        ctx.set(axi.awvalid, 0)
        for k, beat in enumerate(beats):
            ctx.set(axi.wdata, beat)
            ctx.set(axi.wstrb, 0xFF)
            ctx.set(axi.wlast, k == len(beats) - 1)
            ctx.set(axi.wvalid, 1)
            await ctx.tick().until(axi.wready)
        ctx.set(axi.wvalid, 0)
        ctx.set(axi.bready, 1)
        await ctx.tick().until(axi.bvalid)
        ctx.set(axi.araddr, 0x80)
        ctx.set(axi.arlen, len(beats) - 1)
        ctx.set(axi.arvalid, 1)
        await ctx.tick().until(axi.arready)
        ctx.set(axi.arvalid, 0)
        cycle = 0
        while len(got) < len(beats) and cycle < 20 * len(beats):
            # a long stall first, then runs of stalls: the R FIFO fills and must hold
            ready = cycle >= 16 and cycle % 7 not in (1, 2, 3, 5)
            ctx.set(axi.rready, ready)
            await ctx.delay(1e-9)
            if ready and ctx.get(axi.rvalid):
                got.append((ctx.get(axi.rdata), ctx.get(axi.rlast)))
            await ctx.tick()
            cycle += 1

    run(ram, bench, platform)
    assert [d for d, _ in got] == beats
    assert [last for _, last in got] == [0] * (len(beats) - 1) + [1]
