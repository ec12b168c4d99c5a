"""Epilogue staggering: a thread's SAT and STORE move up beside its last GEMM; nothing
moves past an instruction whose entries it shares, and a tile's first instruction stays."""
import numpy as np
import pytest

from vtalab.compiler.exec.templates import Epilogue, fused_conv2d
from vtalab.compiler.topi import Conv2dKnobs, Conv2dShape
from vtalab.compiler.vta import build
from vtalab.compiler.vta.passes.deps import insert_deps
from vtalab.compiler.vta.passes.stagger import stagger_epilogues
from vtalab.compiler.vta.pipeline import lower
from vtalab.compiler.vta.program import program_from_stream
from vtalab.compiler.vta.stream import Record, Stream
from vtalab.spec import preset
from vtalab.spec.isa import AluInsn, AluOp, GemmInsn, Mem, MemInsn, Opcode

from .fsim import run_fsim
from .streams import conv_insns


def _gemm(lo, hi):
    return Record(GemmInsn(), "compute", None, (("uop", 0, 0), ("inp", 0, 9), ("wgt", 0, 0)),
                  (("acc", lo, hi), ("out", lo, hi)))


def _alu(lo, hi, op=AluOp.SAT, src=None):
    reads = (("uop", 1, 1), ("acc", lo, hi)) + ((("acc",) + src,) if src else ())
    return Record(AluInsn(alu_op=op), "compute", None, reads,
                  (("acc", lo, hi), ("out", lo, hi)))


def _store(lo, hi):
    return Record(MemInsn(opcode=Opcode.STORE, mem=Mem.OUT), "store", "out",
                  reads=(("out", lo, hi),))


def _names(stream, recs):
    return [recs.index(r) for r in stream.records]


def test_epilogue_moves_up_to_its_gemm_and_tile_start_stays():
    g0, g1, s0, s1, st0, st1 = _gemm(0, 7), _gemm(8, 15), _alu(0, 7), _alu(8, 15), \
        _store(0, 7), _store(8, 15)
    mov0 = _alu(0, 7, AluOp.MOV, src=(20, 20))        # the next tile's start on thread 0
    recs = [g0, g1, s0, s1, st0, st1, mov0]
    out = stagger_epilogues(Stream(list(recs)), preset("tiny"))
    assert _names(out, recs) == [0, 2, 4, 1, 3, 5, 6]   # g0 s0 st0 g1 s1 st1 mov0


def test_nothing_passes_an_instruction_it_shares_entries_with():
    g = _gemm(0, 15)
    recs = [g, _gemm(0, 7), _alu(0, 7), _store(0, 7)]      # a second GEMM on the same rows
    out = stagger_epilogues(Stream(list(recs)), preset("tiny"))
    assert out.records == recs
    load = Record(MemInsn(opcode=Opcode.LOAD, mem=Mem.INP), "load", "x",
                  writes=(("inp", 0, 9),))
    recs = [_gemm(0, 7), load, _gemm(8, 15), _alu(0, 7)]  # a load is not passed
    assert stagger_epilogues(Stream(list(recs)), preset("tiny")).records == recs


def test_uop_load_moves_with_its_alu():
    uop = Record(MemInsn(opcode=Opcode.LOAD, mem=Mem.UOP), "compute", "__uop__",
                 writes=(("uop", 1, 1),))
    g0, g1, sat = _gemm(0, 7), _gemm(8, 15), _alu(0, 7)
    recs = [g0, g1, uop, sat]
    out = stagger_epilogues(Stream(list(recs)), preset("tiny"))
    assert _names(out, recs) == [0, 2, 3, 1]


@pytest.mark.parametrize("residual", [False, True])
def test_staggered_conv_is_exact_and_stores_beside_the_other_threads_gemm(residual):
    cfg = preset("tiny")
    sh = Conv2dShape(1, 16, 6, 6, 16, 3, 1, 1)
    ep = Epilogue(bias=True, residual=residual, residual_shifts=(-3,) if residual else (),
                  shifts=(9,), lo=0, hi=127, residual_gemm=residual)
    sch, args = fused_conv2d(cfg, sh, ep, Conv2dKnobs(tile_h=2, tile_co=1, vthreads=2))
    before = [r.insn for r in lower(sch, cfg, args, stop_after="prefetch_uops").records]
    after = [r.insn for r in lower(sch, cfg, args, stop_after="stagger_epilogue").records]
    assert sorted(map(repr, before)) == sorted(map(repr, after)) and before != after
    kinds = ["G" if isinstance(i, GemmInsn) else
             "S" if isinstance(i, MemInsn) and i.opcode == Opcode.STORE else "-" for i in after]
    first_store = kinds.index("S")
    assert "G" in kinds[first_store:kinds.index("S", first_store + 1)]
    rng = np.random.default_rng(2)
    ins = {a.name: rng.integers(-100, 100, a.shape).astype(a.dtype.numpy) for a in args[:-1]}
    unstaggered = lower(sch, cfg, args, stop_after="prefetch_uops")
    unstaggered = program_from_stream(cfg, "main", insert_deps(unstaggered, cfg))
    out = run_fsim(build(sch, cfg, args), ins)["out"]
    assert np.array_equal(out, run_fsim(unstaggered, ins)["out"])


def test_a_threads_stores_follow_each_other_up():
    g0, g1, s0, s1 = _gemm(0, 7), _gemm(8, 15), _alu(0, 7), _alu(8, 15)
    st0a, st0b, st1 = _store(0, 3), _store(4, 7), _store(8, 15)
    recs = [g0, g1, s0, s1, st0a, st0b, st1]
    out = stagger_epilogues(Stream(list(recs)), preset("tiny"))
    assert _names(out, recs) == [0, 2, 4, 5, 1, 3, 6]   # both of thread 0's stores moved


def test_threads_keep_a_split_reduction_step_together():
    # a 1x1 conv's step starts with GEMM_OVERWRITE on its first channel block, then GEMM
    # on the rest: thread 0's whole step comes before thread 1's
    insns = conv_insns(Conv2dShape(1, 64, 8, 8, 64, 1, 1, 0),
                       Conv2dKnobs(tile_h=4, tile_co=2, tile_ci=2, vthreads=2), "codegen")
    gemms = [i for i in insns if isinstance(i, GemmInsn)]
    first = [g.overwrite for g in gemms[:4]]
    assert first == [True, False, True, False]


def test_a_threads_weights_load_before_its_inputs():
    def load(mem, lo):
        return Record(MemInsn(opcode=Opcode.LOAD, mem=mem, sram_base=lo), "load", "x",
                      writes=(("inp" if mem == Mem.INP else "wgt", lo, lo),))
    i0a, i0b, w0, i1a, i1b, w1 = (load(Mem.INP, 0), load(Mem.INP, 1), load(Mem.WGT, 0),
                                  load(Mem.INP, 2), load(Mem.INP, 3), load(Mem.WGT, 1))
    recs = [i0a, i0b, w0, i1a, i1b, w1, _gemm(0, 7)]
    out = stagger_epilogues(Stream(list(recs)), preset("tiny"))
    assert _names(out, recs) == [2, 0, 1, 5, 3, 4, 6]   # per thread: weights, then inputs
