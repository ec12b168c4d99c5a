"""The runtime's validator: every rule, messages that name index, field, value and limit,
verdicts cached per program and micro-ops, and the opt-out for trusted programs."""
import numpy as np
import pytest

from vtalab.runtime.validate import reads_stale_uops, validate, verdict
from vtalab.spec import Isa, preset
from vtalab.spec.errors import (DeadlockError, InstructionError, MemoryAccessError,
                                TokenError)
from vtalab.spec.isa import AluInsn, AluOp, FinishInsn, GemmInsn, Mem, MemInsn, Opcode

from tests.rtl.backends import open_backend

CFG = preset("tiny")
LOAD = MemInsn(mem=Mem.INP, x_size=1)


@pytest.mark.parametrize("insn, error, message", [
    (MemInsn(mem=Mem.INP, sram_base=250, x_size=10), MemoryAccessError,
     r"instruction 1 \(LOAD INP\): inp entries 250..259 .* sram_base 250 \+ 10 entries must "
     r"be at most inp_depth 256, not 260"),
    (MemInsn(mem=Mem.WGT, dram_base=1 << 20), MemoryAccessError,
     r"instruction 1 \(LOAD WGT\): DRAM elements 1048576..1048576 must lie below 16384"),
    (MemInsn(mem=Mem.INP, y_size=2, x_size=4, x_stride=3), MemoryAccessError,
     r"instruction 1 \(LOAD INP\): x_stride must be at least x_size \(4\) when y_size > 1, "
     r"not 3"),
    (GemmInsn(uop_bgn=510, uop_end=600), MemoryAccessError,
     r"instruction 1 \(GEMM\): uop_end must be at most uop_depth 512, not 600"),
    (MemInsn(mem=Mem.INP, pop_prev=True), InstructionError,
     r"instruction 1 \(LOAD INP\) on the load module must not set pop_prev"),
    (MemInsn(opcode=Opcode.STORE, mem=Mem.INP), InstructionError,
     r"instruction 1 \(STORE INP\): STORE memory_type must be OUT \(4\), not INP"),
    (GemmInsn(pop_next=True), DeadlockError,
     r"compute module at instruction 1 \(GEMM\) waits: pop from empty queue s2c"),
    (FinishInsn(), InstructionError, r"instruction 2: .* nothing must follow the FINISH at "
                                     r"instruction 1"),
])
def test_each_rule_names_instruction_field_value_and_limit(insn, error, message):
    with pytest.raises(error, match=message):
        validate(CFG, [LOAD, insn, FinishInsn()], dram_bytes=1 << 20)


def test_tokens_are_checked_in_program_order():
    push = LOAD.with_deps(push_next=True)
    pop = GemmInsn(reset=True, pop_prev=True)
    validate(CFG, [push, pop, FinishInsn()])
    with pytest.raises(DeadlockError, match="instruction 0"):      # the push comes later
        validate(CFG, [pop, push, FinishInsn()])
    with pytest.raises(TokenError, match=r"instruction 2 \(FINISH\).* l2c \(1\)"):
        validate(CFG, [push, push, pop.with_deps(pop_prev=False), FinishInsn()][1:])
    with pytest.raises(TokenError, match="MAX_TOKENS 128 tokens in program order, not 129"):
        validate(CFG, [push] * 129 + [FinishInsn()])


def test_the_first_error_in_program_order_wins():
    # a range error at 1 comes before the program-order error at 2, and stops the walk
    bad_range = MemInsn(mem=Mem.INP, sram_base=256, x_size=1)
    with pytest.raises(MemoryAccessError, match="instruction 1"):
        validate(CFG, [LOAD, bad_range, GemmInsn(pop_prev=True), FinishInsn()])
    with pytest.raises(DeadlockError, match="instruction 1"):
        validate(CFG, [LOAD, GemmInsn(pop_prev=True), bad_range, FinishInsn()])


def _dram_with_uops(uops):
    dram = np.zeros(1 << 16, dtype=np.uint8)
    words = Isa(CFG).encode_uops(*zip(*uops))
    dram[:4 * len(uops)] = words.astype("<u4").view(np.uint8)
    return dram


def test_micro_op_indices_come_from_the_programs_uop_loads():
    dram = _dram_with_uops([(0, 0, 0), (10, 3, 1)])

    def read(addr, n):
        return dram[addr:addr + n]

    load_uops = MemInsn(mem=Mem.UOP, sram_base=4, x_size=2)
    gemm = GemmInsn(uop_bgn=4, uop_end=6, iter_out=30, dst_factor_out=9)
    with pytest.raises(MemoryAccessError, match=r"instruction 1 \(GEMM\): dst index must be "
                                                r"below acc_depth 256, not 271"):
        validate(CFG, [load_uops, gemm.with_deps(), FinishInsn()], read_dram=read)
    validate(CFG, [load_uops, GemmInsn(uop_bgn=4, uop_end=6, iter_out=30), FinishInsn()], read)
    alu = AluInsn(alu_op=AluOp.ADD, uop_bgn=4, uop_end=6, iter_in=300, src_factor_in=1)
    assert isinstance(verdict(CFG, [load_uops, alu, FinishInsn()], read), MemoryAccessError)
    assert verdict(CFG, [load_uops, alu.with_deps(), FinishInsn()]) is None   # no reader
    # micro-ops this program did not load: left to the backends (they depend on earlier runs)
    assert verdict(CFG, [gemm, FinishInsn()], read) is None
    assert reads_stale_uops(CFG, [gemm, FinishInsn()], read)
    assert not reads_stale_uops(CFG, [load_uops, gemm, FinishInsn()], read)


def run(dev, insns, **options):
    stream = Isa(dev.cfg).encode_program(insns)
    buf = dev.alloc(len(stream))
    buf.write(stream)
    try:
        return dev.run(buf.addr, len(insns), **options)
    finally:
        buf.free()


@pytest.mark.parametrize("backend", ["fsim", "rtl"])
def test_validation_stops_before_anything_runs_and_can_be_skipped(backend):
    with open_backend(backend, CFG, dram_bytes=1 << 20) as dev:
        out = dev.alloc(64, align=64)
        out.write(np.full(64, 7, np.uint8))
        store = MemInsn(opcode=Opcode.STORE, mem=Mem.OUT, dram_base=out.addr // 8, x_size=1)
        bad = [store, MemInsn(mem=Mem.INP, pop_prev=True), FinishInsn()]
        with pytest.raises(InstructionError, match="instruction 1"):
            run(dev, bad)
        assert (out.read() == 7).all()                # validated: nothing ran
        with pytest.raises(InstructionError, match="instruction 1"):
            run(dev, bad, validate=False)
        assert (out.read()[:8] != 7).any()           # unvalidated: the STORE before it ran


def test_verdicts_are_cached_per_program_and_micro_ops():
    with open_backend("fsim", CFG, dram_bytes=1 << 20) as dev:
        uops = dev.alloc(64)
        uops.write(_dram_with_uops([(0, 0, 0)])[:64])
        load = MemInsn(mem=Mem.UOP, dram_base=uops.addr // 4, x_size=1)
        gemm = GemmInsn(uop_end=1, iter_out=200, dst_factor_out=1)
        prog = [load, gemm, FinishInsn()]
        for _ in range(3):
            run(dev, prog)
        assert len(dev.validator._verdicts) == 1
        uops.write(_dram_with_uops([(100, 0, 0)])[:64])      # dst 100 + 199 > 255
        with pytest.raises(MemoryAccessError, match="instruction 1 .*not 299"):
            run(dev, prog)
        assert len(dev.validator._verdicts) == 2
