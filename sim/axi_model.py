"""cocotb models: an AXI4 memory slave with random back-pressure and a protocol checker,
and an AXI4-Lite host. Each cycle: drive at the falling edge, sample at ReadOnly."""
from __future__ import annotations

import random
from collections import deque

import numpy as np
from cocotb.triggers import FallingEdge, ReadOnly

CHANNELS = {
    "ar": ("arvalid", "arready", ("araddr", "arlen", "arsize", "arburst")),
    "aw": ("awvalid", "awready", ("awaddr", "awlen", "awsize", "awburst")),
    "w": ("wvalid", "wready", ("wdata", "wstrb", "wlast")),
}


class ProtocolError(AssertionError):
    pass


class AxiMemory:
    """Slave side of ``<prefix>__*`` AXI4 signals, backed by ``mem`` (uint8 array)."""

    def __init__(self, dut, mem: np.ndarray, bus_bytes: int, prefix: str = "axi",
                 pressure: float = 0.0, seed: int = 1):
        self.dut, self.mem, self.bus_bytes, self.prefix = dut, mem, bus_bytes, prefix
        self.pressure = pressure
        self.rng = random.Random(seed)
        self.errors: list[str] = []
        self.reads = deque()      # [addr, beats_left]
        self.writes = deque()     # [addr, beats_left]
        self.bresp = 0
        self.rvalid = False
        self.bvalid = False
        self.prev = {}
        self.bursts = {"ar": [], "aw": []}

    def sig(self, name):
        return getattr(self.dut, f"{self.prefix}__{name}")

    def get(self, name) -> int:
        return int(self.sig(name).value)

    def _busy(self) -> bool:
        return self.rng.random() < self.pressure

    def _check(self, cond: bool, msg: str):
        if not cond:
            self.errors.append(msg)
            raise ProtocolError(msg)

    async def run(self):
        clk = self.dut.clk
        while True:
            await FallingEdge(clk)
            self._drive()
            await ReadOnly()
            self._sample()

    def _drive(self):
        for ch in ("ar", "aw", "w"):
            self.sig(CHANNELS[ch][1]).value = int(not self._busy())
        if not self.rvalid and self.reads and not self._busy():
            self.rvalid = True
        if self.rvalid:
            addr, left = self.reads[0]
            self.sig("rdata").value = int.from_bytes(
                self.mem[addr:addr + self.bus_bytes].tobytes(), "little")
            self.sig("rlast").value = int(left == 1)
        self.sig("rvalid").value = int(self.rvalid)
        self.sig("rresp").value = 0
        self.bvalid = self.bresp > 0
        self.sig("bvalid").value = int(self.bvalid)
        self.sig("bresp").value = 0

    def _sample(self):
        now = {}
        for ch, (valid, ready, payload) in CHANNELS.items():
            now[ch] = (self.get(valid), self.get(ready), tuple(self.get(p) for p in payload))
            if ch in self.prev:
                pv, pr, pp = self.prev[ch]
                if pv and not pr:
                    self._check(now[ch][0] == 1, f"{ch}valid dropped before its handshake")
                    self._check(now[ch][2] == pp, f"{ch} payload changed while valid and "
                                                  f"not ready: {pp} -> {now[ch][2]}")
        self.prev = now
        if now["ar"][0] and now["ar"][1]:
            self._address("ar", *now["ar"][2], self.reads)
        if now["aw"][0] and now["aw"][1]:
            self._address("aw", *now["aw"][2], self.writes)
        if now["w"][0] and now["w"][1]:
            self._write_beat(*now["w"][2])
        if self.rvalid and self.get("rready"):
            self.reads[0][0] += self.bus_bytes
            self.reads[0][1] -= 1
            if self.reads[0][1] == 0:
                self.reads.popleft()
            self.rvalid = False
        if self.bvalid and self.get("bready"):
            self.bresp -= 1

    def _address(self, ch, addr, length, size, burst, queue):
        beats = length + 1
        self._check(1 << size == self.bus_bytes, f"{ch}size must be log2 of the bus bytes, "
                                                 f"not {size}")
        self._check(burst == 1, f"{ch}burst must be INCR (1), not {burst}")
        self._check(addr % self.bus_bytes == 0, f"{ch}addr must be bus-aligned, not {addr:#x}")
        self._check(addr // 4096 == (addr + beats * self.bus_bytes - 1) // 4096,
                    f"{ch} burst at {addr:#x} of {beats} beats must not cross 4 KiB")
        self._check(addr + beats * self.bus_bytes <= len(self.mem),
                    f"{ch} burst at {addr:#x} must lie inside the {len(self.mem)}-byte memory")
        self.bursts[ch].append((addr, beats))
        queue.append([addr, beats])

    def _write_beat(self, data, strb, last):
        self._check(bool(self.writes), "W beat must follow its AW burst")
        addr, left = self.writes[0]
        raw = data.to_bytes(self.bus_bytes, "little")
        for lane in range(self.bus_bytes):
            if strb >> lane & 1:
                self.mem[addr + lane] = raw[lane]
        self._check(bool(last) == (left == 1), f"WLAST must mark beat {self.writes[0]} "
                                               f"correctly, got {last}")
        self.writes[0][0] += self.bus_bytes
        self.writes[0][1] -= 1
        if self.writes[0][1] == 0:
            self.writes.popleft()
            self.bresp += 1


class AxiLiteHost:
    """Master side of ``<prefix>__*`` AXI4-Lite signals."""

    def __init__(self, dut, prefix: str = "ctrl"):
        self.dut, self.prefix = dut, prefix
        for name in ("awvalid", "wvalid", "arvalid"):
            self.sig(name).value = 0
        self.sig("bready").value = 1
        self.sig("rready").value = 1
        self.sig("wstrb").value = 0xF

    def sig(self, name):
        return getattr(self.dut, f"{self.prefix}__{name}")

    async def write(self, addr: int, value: int):
        clk = self.dut.clk
        await FallingEdge(clk)
        self.sig("awaddr").value = addr
        self.sig("wdata").value = value & 0xFFFFFFFF
        self.sig("awvalid").value = 1
        self.sig("wvalid").value = 1
        while True:
            await ReadOnly()
            accepted = int(self.sig("awready").value) and int(self.sig("wready").value)
            await FallingEdge(clk)
            if accepted:
                break
        self.sig("awvalid").value = 0
        self.sig("wvalid").value = 0
        while True:
            await ReadOnly()
            if int(self.sig("bvalid").value):
                break
            await FallingEdge(clk)

    async def read(self, addr: int) -> int:
        clk = self.dut.clk
        await FallingEdge(clk)
        self.sig("araddr").value = addr
        self.sig("arvalid").value = 1
        while True:
            await ReadOnly()
            accepted = int(self.sig("arready").value)
            await FallingEdge(clk)
            if accepted:
                break
        self.sig("arvalid").value = 0
        while True:
            await ReadOnly()
            if int(self.sig("rvalid").value):
                value = int(self.sig("rdata").value)
                await FallingEdge(clk)
                return value
            await FallingEdge(clk)
