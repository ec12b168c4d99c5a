"""Micro-op kernels load up front: every LOAD UOP moves to the start and contiguous ones
merge; a program that reloads a kernel's entries keeps its order."""
from vtalab.compiler.topi import Conv2dKnobs, Conv2dShape
from vtalab.compiler.vta.passes.uop_prefetch import prefetch_uops
from vtalab.compiler.vta.stream import Record, Stream
from vtalab.runtime.program import UOP_SYMBOL
from vtalab.spec import preset
from vtalab.spec.isa import GemmInsn, Mem, MemInsn, Opcode

from .streams import conv_insns


def _uop(sram, dram, n):
    insn = MemInsn(opcode=Opcode.LOAD, mem=Mem.UOP, sram_base=sram, dram_base=dram,
                   x_size=n, x_stride=n)
    return Record(insn, "compute", UOP_SYMBOL, writes=(("uop", sram, sram + n - 1),))


def _gemm(bgn, end):
    return Record(GemmInsn(uop_bgn=bgn, uop_end=end), "compute", None,
                  (("uop", bgn, end - 1),), (("acc", 0, 7),))


def test_loads_move_first_and_merge():
    recs = [_uop(0, 0, 3), _gemm(0, 3), _uop(3, 3, 5), _gemm(3, 8), _uop(8, 20, 2),
            _gemm(8, 10)]
    out = prefetch_uops(Stream(list(recs)), preset("tiny")).records
    loads = [r.insn for r in out[:2]]
    assert [(i.sram_base, i.dram_base, i.x_size) for i in loads] == [(0, 0, 8), (8, 20, 2)]
    assert out[2:] == [recs[1], recs[3], recs[5]]


def test_a_reloaded_kernel_keeps_the_order():
    recs = [_uop(0, 0, 4), _gemm(0, 4), _uop(0, 4, 4), _gemm(0, 4)]
    assert prefetch_uops(Stream(list(recs)), preset("tiny")).records == recs


def test_a_conv_loads_its_kernels_once_before_any_micro_op():
    insns = conv_insns(Conv2dShape(1, 64, 14, 14, 64, 3, 1, 1),
                       Conv2dKnobs(tile_h=7, tile_co=2, tile_ci=2, vthreads=2), "prefetch_uops")
    uops = [k for k, i in enumerate(insns) if isinstance(i, MemInsn) and i.mem == Mem.UOP]
    first_op = next(k for k, i in enumerate(insns) if not isinstance(i, MemInsn))
    assert len(uops) == 1 and uops[0] < first_op
