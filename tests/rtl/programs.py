"""Small programs the RTL tests share."""
import numpy as np

from vtalab.runtime import ProgramBuilder
from vtalab.runtime.workloads import BlockedMatmul, matmul_reference
from vtalab.spec.isa import FinishInsn, GemmInsn, Isa


def matmul(dev, m=16, k=32, n=32, vthreads=2, seed=0):
    """Run a blocked int8 matmul on ``dev``; (result, expected, counters, program)."""
    rng = np.random.default_rng(seed)
    a = rng.integers(-128, 128, (m, k), dtype=np.int8)
    w = rng.integers(-128, 128, (n, k), dtype=np.int8)
    bias = rng.integers(-1000, 1000, n, dtype=np.int32)
    mm = BlockedMatmul(dev.cfg, m, k, n, shift=8, vthreads=vthreads)
    bufs = mm.place(dev, a, w, bias)
    builder = ProgramBuilder(dev)
    mm.build(builder, bufs)
    program = builder.finish()
    counters = program.run(dev)
    result = mm.result(bufs)
    for buf in bufs.values():
        buf.free()
    return result, matmul_reference(a, w, bias, 8), counters, program


def run_insns(dev, insns):
    """Place raw instructions in device DRAM and run them."""
    stream = Isa(dev.cfg).encode_program(insns)
    buf = dev.alloc(len(stream))
    buf.write(stream)
    try:
        return dev.run(buf.addr, len(insns))
    finally:
        if not dev.closed:
            buf.free()


def deadlock_program():
    """A GEMM that pops an l2c token no load ever pushes."""
    return [GemmInsn(pop_prev=True, reset=True), FinishInsn()]
