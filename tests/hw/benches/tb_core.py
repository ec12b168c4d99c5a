"""System bench: Core + AXI memory model runs programs; DRAM must match the functional
simulator bit for bit. The tiny preset, with VTALAB_BUS_BITS and the parameters of the JSON
object VTALAB_CONFIG_EXTRA; VTALAB_PERF=1 also measures cycles."""
from __future__ import annotations

import json
import os

import cocotb
import numpy as np
from cocotb.clock import Clock
from cocotb.triggers import ClockCycles, FallingEdge

from programs import PROGRAMS, REGION, perf_program
from vtalab.sim.axi_model import AxiLiteHost, AxiMemory
from vtalab.spec import Config, preset
from vtalab.spec.regs import STATUS_BITS, offset

CFG = Config.from_dict(dict(preset("tiny").hardware_dict(),
                            bus_bits=int(os.environ.get("VTALAB_BUS_BITS", "64")),
                            **json.loads(os.environ.get("VTALAB_CONFIG_EXTRA", "{}"))))
CYCLE_LIMIT = int(os.environ.get("VTALAB_CYCLE_LIMIT", "20000"))


async def reset(dut):
    Clock(dut.clk, 10, unit="ns").start()
    dut.rst.value = 1
    await ClockCycles(dut.clk, 3)
    dut.rst.value = 0
    await ClockCycles(dut.clk, 1)


async def run_image(dut, image: np.ndarray, count: int, pressure: float, seed: int,
                    insn_addr: int = REGION["insn"]):
    """Run ``count`` instructions at ``insn_addr``; return (final memory, counters)."""
    await reset(dut)
    mem = image.copy()
    model = AxiMemory(dut, mem, CFG.bus_bytes, pressure=pressure, seed=seed)
    task = cocotb.start_soon(model.run())
    host = AxiLiteHost(dut)
    await host.write(offset("insn_addr"), insn_addr)
    await host.write(offset("insn_addr") + 4, 0)
    await host.write(offset("insn_count"), count)
    await host.write(offset("start"), 1)
    for cycle in range(CYCLE_LIMIT):
        await FallingEdge(dut.clk)
        if int(dut.done.value):
            break
        if model.errors:
            break
    else:
        status = await host.read(offset("status"))
        waits = [name for name, bit in STATUS_BITS.items() if status >> bit & 1]
        for unit in ("fetch", "load", "compute", "store"):
            try:
                dut._log.info(f"{unit} busy={getattr(dut, unit).busy.value}")
            except AttributeError as exc:
                dut._log.info(f"{unit}: {exc}")
        dut._log.info(f"model reads={list(model.reads)} writes={list(model.writes)} "
                      f"bursts={model.bursts}")
        raise AssertionError(f"core must finish within {CYCLE_LIMIT} cycles; status {waits}")
    assert not model.errors, model.errors
    counters = {}
    for name in ("cycles", "gemm_uops", "alu_uops", "compute_busy", "insns", "bytes_read",
                 "bytes_written"):
        counters[name] = await host.read(offset(name))
    assert await host.read(offset("config_id")) == CFG.config_id
    status = await host.read(offset("status"))
    assert status >> STATUS_BITS["done"] & 1 and not status >> STATUS_BITS["error"] & 1
    task.cancel()
    return mem, counters


def compare(got: np.ndarray, want: np.ndarray, name: str):
    diff = np.flatnonzero(got != want)
    assert diff.size == 0, (f"{name}: {diff.size} DRAM bytes differ from the functional "
                            f"simulator, first at {diff[0]:#x}: got {got[diff[0]]}, "
                            f"want {want[diff[0]]}")


def program_test(name: str, pressure: float):
    async def body(dut):
        program = PROGRAMS[name](CFG)
        mem, counters = await run_image(dut, program.image(), len(program.insns), pressure,
                                        seed=len(name))
        compare(mem, program.expected(), name)
        dut._log.info(f"{name}: {counters}")
    body.__name__ = body.__qualname__ = f"test_{name}_p{int(pressure * 100)}"
    return cocotb.test()(body)


for _name in PROGRAMS:
    globals()[f"test_{_name}"] = program_test(_name, 0.0)
    globals()[f"test_{_name}_backpressure"] = program_test(_name, 0.3)


@cocotb.test(skip=os.environ.get("VTALAB_PERF") != "1")
async def test_perf(dut):
    """Cycles of one-instruction GEMM and ALU programs of N micro-ops."""
    results = {}
    for op in ("gemm", "alu"):
        for iters in (1, 16, 256):
            program = perf_program(CFG, op, 16, iters)
            mem, counters = await run_image(dut, program.image(), len(program.insns), 0.0, 1)
            compare(mem, program.expected(), f"perf {op}")
            results[f"{op}_{16 * iters}"] = counters
    dut._log.info("PERF " + json.dumps(results))
    path = os.environ.get("VTALAB_PERF_OUT")
    if path:
        with open(path, "w") as out:
            json.dump(results, out)


@cocotb.test()
async def test_registers(dut):
    """RW registers read back, W1S reads as 0, CONFIG_ID holds the Config's fingerprint."""
    await reset(dut)
    host = AxiLiteHost(dut)
    for name, value in (("scratch", 0xDEADBEEF), ("insn_count", 1234),
                        ("insn_addr", 0x12345670)):
        await host.write(offset(name), value)
        assert await host.read(offset(name)) == value, name
    assert await host.read(offset("start")) == 0
    assert await host.read(offset("config_id")) == CFG.config_id
    status = await host.read(offset("status"))
    assert status == 0, f"status must be 0 before START, not {status:#x}"
