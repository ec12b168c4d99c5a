"""DMA bench: the load module (every padding case, strides, wgt ignoring pads, tokens)
and the AXI master (three read clients and the write client under random back-pressure,
with the protocol checker of the memory model)."""
from __future__ import annotations

import os

import cocotb
import numpy as np
from cocotb.clock import Clock
from cocotb.triggers import ClockCycles, FallingEdge, ReadOnly

from vtalab.sim.axi_model import AxiMemory
from vtalab.sim.memops import execute_load
from vtalab.sim.state import SramState
from vtalab.spec import Config, Isa, preset
from vtalab.spec.isa import Mem, MemInsn, Opcode

CFG = Config.from_dict(dict(preset("tiny").hardware_dict(),
                            bus_bits=int(os.environ.get("VTALAB_BUS_BITS", "128"))))
MEM_BYTES = 1 << 16
ADDR_BITS = 32


async def start(dut, pressure: float, seed: int):
    Clock(dut.clk, 10, unit="ns").start()
    for name in ("load_insn__valid", "read_1__req__valid", "read_2__req__valid",
                 "write__req__valid", "write__data__valid", "load_has_c2l"):
        getattr(dut, name).value = 0
    for name in ("read_1__resp__ready", "read_2__resp__ready"):
        getattr(dut, name).value = 1
    dut.rst.value = 1
    await ClockCycles(dut.clk, 2)
    dut.rst.value = 0
    rng = np.random.default_rng(seed)
    mem = rng.integers(0, 256, MEM_BYTES, dtype=np.uint8)
    model = AxiMemory(dut, mem, CFG.bus_bytes, pressure=pressure, seed=seed)
    cocotb.start_soon(model.run())
    return model, rng


def entry_words(array: np.ndarray) -> list[int]:
    raw = np.ascontiguousarray(array.astype(array.dtype.newbyteorder("<"))).view(np.uint8).ravel()
    width = raw.size // array.shape[0]
    return [int.from_bytes(raw[k * width:(k + 1) * width].tobytes(), "little")
            for k in range(array.shape[0])]


async def run_load(dut, model, insn: MemInsn, c2l_delay: int = 0):
    """Send one LOAD, record SRAM writes and token strobes until the module idles."""
    writes = {"inp": {}, "wgt": {}}
    pushes, pops = 0, 0
    await FallingEdge(dut.clk)
    dut.load_insn__payload.value = Isa(CFG).encode(insn)
    dut.load_has_c2l.value = 0 if c2l_delay else 1
    sent = False
    idle_cycles, cycle, waited = 0, 0, 0
    while idle_cycles < 8:
        if cycle:
            await FallingEdge(dut.clk)
        dut.load_insn__valid.value = int(not sent)
        if cycle == c2l_delay:
            dut.load_has_c2l.value = 1
        await ReadOnly()
        if not sent and int(dut.load_insn__ready.value):
            sent = True
        for buf in writes:
            if int(getattr(dut, f"load_{buf}_write__en").value):
                addr = int(getattr(dut, f"load_{buf}_write__addr").value)
                writes[buf][addr] = int(getattr(dut, f"load_{buf}_write__data").value)
        pushes += int(dut.load_push_l2c.value)
        pops += int(dut.load_pop_c2l.value)
        waited += int(dut.load_waiting.value)
        busy = int(dut.load_busy.value) or not sent
        idle_cycles = 0 if busy else idle_cycles + 1
        cycle += 1
        assert cycle < 20000, "load must finish"
        assert not model.errors, model.errors
    return writes, pushes, pops, waited


def expected_load(mem: np.ndarray, insn: MemInsn) -> dict:
    sram = SramState(CFG)
    execute_load(CFG, sram, mem, insn)
    buf = insn.mem.buffer
    pads = (insn.y_pad_0, insn.y_pad_1, insn.x_pad_0, insn.x_pad_1) if buf == "inp" else (0,) * 4
    count = (pads[0] + insn.y_size + pads[1]) * (pads[2] + insn.x_size + pads[3])
    words = entry_words(sram[buf][insn.sram_base:insn.sram_base + count])
    return {insn.sram_base + k: word for k, word in enumerate(words)}


@cocotb.test(timeout_time=1, timeout_unit="ms")
async def test_load_every_padding_case(dut):
    model, rng = await start(dut, pressure=0.3, seed=11)
    entry = CFG.entry_bytes("inp")
    for case in range(16):
        pads = [(case >> bit & 1) * int(rng.integers(1, 4)) for bit in range(4)]
        y_size, x_size = int(rng.integers(1, 4)), int(rng.integers(1, 6))
        x_stride = x_size + int(rng.integers(0, 4))
        insn = MemInsn(opcode=Opcode.LOAD, mem=Mem.INP, sram_base=int(rng.integers(0, 64)),
                       dram_base=int(rng.integers(0, 4000)), y_size=y_size, x_size=x_size,
                       x_stride=x_stride, y_pad_0=pads[0], y_pad_1=pads[1], x_pad_0=pads[2],
                       x_pad_1=pads[3], push_next=case % 2 == 1)
        writes, pushes, pops, _ = await run_load(dut, model, insn)
        want = expected_load(model.mem, insn)
        assert writes["inp"] == want, f"case {case} {insn}: SRAM writes differ"
        assert not writes["wgt"]
        assert pushes == int(insn.push_next) and pops == 0
    assert entry * 4000 < MEM_BYTES


@cocotb.test(timeout_time=1, timeout_unit="ms")
async def test_load_wgt_ignores_pads_and_waits_for_token(dut):
    model, rng = await start(dut, pressure=0.5, seed=12)
    insn = MemInsn(opcode=Opcode.LOAD, mem=Mem.WGT, sram_base=3, dram_base=17, y_size=3,
                   x_size=2, x_stride=5, y_pad_0=1, y_pad_1=2, x_pad_0=3, x_pad_1=1,
                   pop_next=True, push_next=True)
    writes, pushes, pops, waited = await run_load(dut, model, insn, c2l_delay=20)
    assert writes["wgt"] == expected_load(model.mem, insn)
    assert not writes["inp"]
    assert pops == 1 and pushes == 1 and waited >= 15, (pops, pushes, waited)


async def read_client(dut, name: str, requests: list, rng, mem: np.ndarray):
    """Issue (addr, beats) requests and check every returned beat against memory."""
    expected = []
    for addr, beats in requests:
        expected += [int.from_bytes(mem[a:a + CFG.bus_bytes].tobytes(), "little")
                     for a in range(addr, addr + beats * CFG.bus_bytes, CFG.bus_bytes)]
    req_valid = getattr(dut, f"{name}__req__valid")
    pending = list(requests)
    got = []
    while len(got) < len(expected):
        await FallingEdge(dut.clk)
        if pending and (int(req_valid.value) or rng.random() < 0.5):
            addr, beats = pending[0]
            getattr(dut, f"{name}__req__payload").value = addr | beats << ADDR_BITS
            req_valid.value = 1
        else:
            req_valid.value = 0
        getattr(dut, f"{name}__resp__ready").value = int(rng.random() < 0.7)
        await ReadOnly()
        if int(req_valid.value) and int(getattr(dut, f"{name}__req__ready").value):
            pending.pop(0)
        if int(getattr(dut, f"{name}__resp__valid").value) and \
                int(getattr(dut, f"{name}__resp__ready").value):
            got.append(int(getattr(dut, f"{name}__resp__payload").value))
    assert got == expected, f"{name}: read data differ"


async def write_client(dut, requests: list, rng, mem: np.ndarray):
    beats = []
    for addr, count in requests:
        for k in range(count):
            data = int.from_bytes(rng.integers(0, 256, CFG.bus_bytes, dtype=np.uint8).tobytes(),
                                  "little")
            strb = int(rng.integers(0, 1 << CFG.bus_bytes))
            beats.append((addr + k * CFG.bus_bytes, data, strb))
            raw = data.to_bytes(CFG.bus_bytes, "little")
            for lane in range(CFG.bus_bytes):
                if strb >> lane & 1:
                    mem[addr + k * CFG.bus_bytes + lane] = raw[lane]
    pending = list(requests)
    req_live = data_live = False
    while pending or beats:
        await FallingEdge(dut.clk)
        req_live = bool(pending)
        if req_live:
            addr, count = pending[0]
            dut.write__req__payload.value = addr | count << ADDR_BITS
        dut.write__req__valid.value = int(req_live)
        data_live = bool(beats) and (data_live or rng.random() < 0.7)
        if data_live:
            _, data, strb = beats[0]
            dut.write__data__payload.value = data | strb << CFG.bus_bits
        dut.write__data__valid.value = int(data_live)
        await ReadOnly()
        if req_live and int(dut.write__req__ready.value):
            pending.pop(0)
        if data_live and int(dut.write__data__ready.value):
            beats.pop(0)
            data_live = False
    await FallingEdge(dut.clk)
    dut.write__req__valid.value = 0
    dut.write__data__valid.value = 0
    while True:
        await FallingEdge(dut.clk)
        await ReadOnly()
        if int(dut.write__idle.value):
            break


@cocotb.test(timeout_time=1, timeout_unit="ms")
async def test_axi_master_under_backpressure(dut):
    model, rng = await start(dut, pressure=0.5, seed=13)
    bb = CFG.bus_bytes
    half = MEM_BYTES // 2

    def requests(count, base, limit):
        out = []
        for _ in range(count):
            beats = int(rng.choice([1, 2, 7, 64, 300]))
            addr = base + int(rng.integers(0, (limit - beats * bb) // bb)) * bb
            out.append((addr, beats))
        return out

    reads1 = requests(6, 0, half) + [(4096 - 2 * bb, 5)]
    reads2 = requests(6, 0, half)
    writes = requests(6, half, half) + [(half + 8192 - bb, 3)]
    want = model.mem.copy()
    task1 = cocotb.start_soon(read_client(dut, "read_1", reads1, np.random.default_rng(1),
                                          model.mem.copy()))
    task2 = cocotb.start_soon(read_client(dut, "read_2", reads2, np.random.default_rng(2),
                                          model.mem.copy()))
    await write_client(dut, writes, np.random.default_rng(3), want)
    await task1
    await task2
    assert not model.errors, model.errors
    assert np.array_equal(model.mem, want), "memory after writes differs"
    lengths = [beats for _, beats in model.bursts["ar"] + model.bursts["aw"]]
    assert max(lengths) <= 256 and sum(b for _, b in reads1 + reads2) == \
        sum(b for _, b in model.bursts["ar"])
