"""Micro-kernels: recording like VTA, the uop SRAM cache (hit, miss, wrap-around eviction),
and how the builder loads each distinct kernel once."""
import numpy as np
import pytest

from vtalab.runtime import KernelRecorder, Loop, ProgramBuilder, UopCache, UopKernel, open_device
from vtalab.spec import preset
from vtalab.spec.errors import ProgramError
from vtalab.spec.isa import AluInsn, AluOp, GemmInsn, Mem, MemInsn

CFG = preset("tiny")


@pytest.fixture
def b():
    return ProgramBuilder(CFG)


def gemm_kernel(n: int = 1, base: int = 0) -> UopKernel:
    return UopKernel.gemm([(base + k, k, 0) for k in range(n)])


# ---- micro-kernel cache ---------------------------------------------------------------------

def test_cache_hit_loads_kernel_once(b):
    for _ in range(3):
        b.push_gemm(gemm_kernel(4))
    program = b.finish()
    uop_loads = [i for i in program.insns if isinstance(i, MemInsn) and i.mem == Mem.UOP]
    assert len(uop_loads) == 1 and uop_loads[0].x_size == 4
    assert program.stats == {"uop_cache_hits": 2, "uop_cache_misses": 1,
                             "uop_cache_evictions": 0}
    gemms = [i for i in program.insns if isinstance(i, GemmInsn)]
    assert {(g.uop_bgn, g.uop_end) for g in gemms} == {(0, 4)}


def test_kernels_sharing_uops_share_sram_but_not_loops(b):
    b.push_gemm(UopKernel.gemm([(0, 0, 0)], [Loop(4, 1, 1, 0)]))
    b.push_gemm(UopKernel.gemm([(0, 0, 0)], [Loop(2, 1, 0, 1)], reset=True))
    first, second = [i for i in b.insns if isinstance(i, GemmInsn)]
    assert (first.uop_bgn, first.uop_end) == (second.uop_bgn, second.uop_end)
    assert (first.iter_out, second.iter_out, second.reset) == (4, 2, True)


def test_distinct_kernels_are_placed_one_after_another(b):
    b.push_gemm(gemm_kernel(3))
    b.push_gemm(gemm_kernel(5, base=7))
    loads = [i for i in b.insns if isinstance(i, MemInsn)]
    assert [(i.sram_base, i.x_size, i.dram_base) for i in loads] == [(0, 3, 0), (3, 5, 3)]


def test_full_uop_buffer_wraps_and_evicts():
    cache = UopCache(depth=10)
    a, c, d = (np.arange(n, dtype=np.uint32) + 100 * k for k, n in enumerate((4, 4, 6)))
    assert cache.place(a) == (0, 4, False)
    assert cache.place(c) == (4, 8, False)
    assert cache.place(d) == (0, 6, False)             # does not fit at 8: wraps, evicts both
    assert a not in cache and c not in cache and len(cache) == 1
    assert cache.evictions == 2
    assert cache.place(a) == (6, 10, False)            # reloaded after eviction
    assert cache.place(d) == (0, 6, True)


def test_eviction_reloads_in_a_program_that_still_runs():
    cfg = CFG
    half = cfg.uop_depth // 2 + 1
    with open_device("fsim", cfg, dram_bytes=1 << 18) as dev:
        b = ProgramBuilder(dev)
        big = [UopKernel.gemm([(k % cfg.acc_depth, 0, 0) for k in range(half)], reset=True),
               UopKernel.gemm([((k + 1) % cfg.acc_depth, 0, 0) for k in range(half)],
                              reset=True)]
        for kernel in big + big:
            b.push_gemm(kernel)
        program = b.finish()
        assert program.stats["uop_cache_misses"] == 4
        assert program.stats["uop_cache_evictions"] == 3
        counters = program.run(dev)
        assert counters["bytes_uop"] == 4 * half * 4
        assert counters["gemm_uops"] == 4 * half


def test_kernel_larger_than_uop_buffer_is_refused(b):
    kernel = UopKernel.gemm([(0, 0, 0)] * (CFG.uop_depth + 1))
    with pytest.raises(ProgramError, match=f"kernel of {CFG.uop_depth + 1} micro-ops must fit "
                                           f"the uop buffer \\(uop_depth {CFG.uop_depth}\\)"):
        b.push_gemm(kernel)


# ---- recording like VTA -----------------------------------------------------------------------

def test_recorded_kernel_equals_declared_one(b):
    b.uop_loop_begin(4, dst_factor=2, src_factor=1)
    b.uop_loop_begin(2, dst_factor=1, wgt_factor=1)
    b.uop_push(0, 0, 0)
    b.uop_push(8, 3, 1)
    b.uop_loop_end()
    b.uop_loop_end()
    b.push_gemm()
    declared = UopKernel.gemm([(0, 0, 0), (8, 3, 1)], [Loop(4, 2, 1, 0), Loop(2, 1, 0, 1)])
    assert b.insns[-1] == GemmInsn(uop_bgn=0, uop_end=2, **declared.loop_fields())


def test_recorded_alu_kernel(b):
    for k in range(3):
        b.uop_push(k, k + 4, mode="alu", alu_op="max", use_imm=True, imm=-2)
    b.push_alu()
    assert b.insns[-1] == AluInsn(uop_bgn=0, uop_end=3, alu_op=AluOp.MAX, use_imm=True, imm=-2)


@pytest.mark.parametrize("record,match", [
    (lambda r: (r.push(0, 0), r.loop_begin(2)), "loop_begin must come before the kernel's "
                                                "first micro-op push, not after 1 pushes"),
    (lambda r: [r.loop_begin(2) for _ in range(3)], "loops must nest at most 2 deep, not 3"),
    (lambda r: r.loop_end(), "loop_end must match a loop_begin"),
    (lambda r: (r.push(0, 0), r.push(1, 1, reset=True)),
     "same reset \\(False\\), not True"),
    (lambda r: (r.loop_begin(2), r.push(0, 0), r.finish()), "must all be closed by loop_end"),
    (lambda r: r.finish(), "at least one micro-op, not 0"),
    (lambda r: r.loop_begin(0), "loop extent must be a positive integer, not 0"),
    (lambda r: r.push(0, 0, mode="alu", alu_op="DIV"), "alu_op must be one of"),
])
def test_recording_errors(record, match):
    with pytest.raises(ProgramError, match=match):
        record(KernelRecorder())


def test_push_without_kernel_and_wrong_mode(b):
    with pytest.raises(ProgramError, match="push_gemm needs a kernel"):
        b.push_gemm()
    with pytest.raises(ProgramError, match="push_alu kernel must be a alu UopKernel"):
        b.push_alu(gemm_kernel())
    b.uop_push(0, 0)
    with pytest.raises(ProgramError, match="recorded kernel must be pushed"):
        b.finish()
