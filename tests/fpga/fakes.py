"""A register bus served by the functional simulator: the board driver without a board."""
import numpy as np

from vtalab.sim.fsim import FunctionalSimulator
from vtalab.spec.regs import COUNTERS, STATUS_BITS, register


class FsimRegisters:
    """Answers the register map like the hardware: START runs the program in the simulator.

    ``dram`` is the accelerator's whole address space; the DMA memory is a window of it.
    """

    def __init__(self, cfg, dram_bytes: int, config_id=None, hang=False, error=False):
        self.sim = FunctionalSimulator(cfg, dram_bytes=dram_bytes)
        self.values = {register("config_id").offset: cfg.config_id if config_id is None
                       else config_id}
        self.hang, self.error = hang, error
        self.log = []

    def read32(self, offset: int) -> int:
        self.log.append(("r", offset))
        return self.values.get(offset, 0)

    def write32(self, offset: int, value: int) -> None:
        self.log.append(("w", offset, value))
        self.values[offset] = value
        if offset == register("start").offset and value & 1:
            self._start()

    def _start(self):
        status = register("status").offset
        self.values[status] = 1 << STATUS_BITS["busy"]
        if self.hang:
            self.values[status] |= 1 << STATUS_BITS["compute_wait_l2c"]
            return
        addr = self.values[register("insn_addr").offset]
        count = self.values[register("insn_count").offset]
        counters = self.sim.run(addr, count)
        self.values[status] = 1 << STATUS_BITS["done"] | self.error << STATUS_BITS["error"]
        for name in COUNTERS:
            reg = register(name)
            value = int(counters.get(name, 0))
            self.values[reg.offset] = value & 0xFFFFFFFF
            self.values[reg.offset + 4] = value >> 32

    def close(self):
        pass


def run_matmul(dev, m=16, k=32, n=16, seed=0):
    """Blocked int8 matmul with requant on ``dev``: (result, numpy reference, counters)."""
    from vtalab.runtime import ProgramBuilder
    from vtalab.runtime.workloads import BlockedMatmul, matmul_reference
    rng = np.random.default_rng(seed)
    a = rng.integers(-128, 128, (m, k))
    w = rng.integers(-128, 128, (n, k))
    bias = rng.integers(-30000, 30000, n)
    mm = BlockedMatmul(dev.cfg, m, k, n, shift=7, vthreads=2)
    bufs = mm.place(dev, a, w, bias)
    builder = ProgramBuilder(dev)
    mm.build(builder, bufs)
    counters = builder.synchronize()
    return mm.result(bufs), matmul_reference(a, w, bias, 7), counters
