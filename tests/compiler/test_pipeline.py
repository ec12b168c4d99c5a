"""Pass list, dump_after, IR verifier and the token verifier."""
import io

import pytest

from vtalab.spec import preset
from vtalab.spec.isa import GemmInsn
from vtalab.compiler.errors import CompileError, VerifyError
from vtalab.compiler.topi import DenseKnobs, Requant, dense
from vtalab.compiler.vta import PASSES, lower
from vtalab.compiler.vta.passes.verify_tokens import verify_tokens
from vtalab.compiler.vta.pipeline import PASS_NAMES


def _dense(vt=2):
    cfg = preset("tiny")
    return cfg, dense(cfg, 2, 16, 32, Requant(shift=4), DenseKnobs(tile_n=2, vthreads=vt))


def test_pass_list_is_ordered_and_named():
    assert PASS_NAMES[0] == "schedule_ops"
    assert [n for n, _ in PASSES][-5:] == ["codegen", "prefetch_uops", "stagger_epilogue",
                                           "insert_deps", "verify_tokens"]


def test_dump_after_prints_named_pass():
    cfg, (sch, args) = _dense()
    out = io.StringIO()
    lower(sch, cfg, args, dump_after=["match_alu", "fold_uops"], out=out)
    text = out.getvalue()
    assert "IR after match_alu" in text and "alu_sat" in text
    assert "gemm_kernel" in text


def test_unknown_pass_name():
    cfg, (sch, args) = _dense()
    with pytest.raises(CompileError, match="pass must be one of"):
        lower(sch, cfg, args, dump_after="no_such_pass")


def test_stop_after_returns_ir():
    cfg, (sch, args) = _dense(vt=1)
    ir = lower(sch, cfg, args, stop_after="tensorize_gemm")
    assert "gemm" in str(ir) and "dma_load" in str(ir)


def test_token_verifier_catches_race_and_deadlock():
    cfg, (sch, args) = _dense()
    stream = lower(sch, cfg, args)
    first_gemm = next(i for i, r in enumerate(stream.records)
                      if isinstance(r.insn, GemmInsn) and not r.insn.reset)
    rec = stream.records[first_gemm]
    assert rec.insn.pop_prev      # waits for its inputs
    rec.set_flags(pop_prev=False)
    with pytest.raises(VerifyError):
        verify_tokens(stream, cfg)
    rec.set_flags(pop_prev=True, pop_next=True)
    with pytest.raises(VerifyError, match="deadlock|left"):
        verify_tokens(stream, cfg)
