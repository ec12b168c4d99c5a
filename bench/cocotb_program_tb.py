"""cocotb bench for bench/rtl_speed.py: runs one saved program image on the Core with the
system bench's Python AXI memory model and AXI4-Lite host; writes cycles and seconds.

Environment: VTALAB_CONFIG (preset), VTALAB_PROGRAM (.npz from runtime.runfile),
VTALAB_RESULT (JSON path), VTALAB_MAX_CYCLES (stop early: a rate is still measured).
"""
from __future__ import annotations

import json
import os
import time

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import ClockCycles, RisingEdge

from vtalab.sim.axi_model import AxiLiteHost, AxiMemory
from vtalab.runtime.runfile import load_program
from vtalab.spec.regs import offset


@cocotb.test()
async def run_program(dut):
    cfg, image, insn_addr, count = load_program(os.environ["VTALAB_PROGRAM"])
    limit = int(os.environ.get("VTALAB_MAX_CYCLES", "0")) or None
    Clock(dut.clk, 10, unit="ns").start()
    dut.rst.value = 1
    await ClockCycles(dut.clk, 3)
    dut.rst.value = 0
    mem = image.copy()
    model = AxiMemory(dut, mem, cfg.bus_bytes)
    cocotb.start_soon(model.run())
    host = AxiLiteHost(dut)
    await host.write(offset("insn_addr"), insn_addr)
    await host.write(offset("insn_addr") + 4, 0)
    await host.write(offset("insn_count"), count)
    start = time.perf_counter()
    await host.write(offset("start"), 1)
    cycles = 0
    while not int(dut.done.value) and (limit is None or cycles < limit):
        await RisingEdge(dut.clk)
        cycles += 1
    seconds = time.perf_counter() - start
    finished = bool(int(dut.done.value))
    hw_cycles = await host.read(offset("cycles")) if finished else cycles
    with open(os.environ["VTALAB_RESULT"], "w") as out:
        json.dump({"cycles": cycles, "hw_cycles": hw_cycles, "seconds": seconds,
                   "finished": finished, "errors": model.errors}, out)
