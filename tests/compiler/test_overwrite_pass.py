"""compiler/vta/passes/overwrite.py: a reduction's reset pass becomes its first step as
GEMM_OVERWRITE (by default wherever it can; with the option ``reset_multi_loop`` only where
the reduction has at most one loop in the tile); the outputs stay bit-exact on the
functional simulator and the RTL, and exactly the reset micro-ops disappear."""
import numpy as np
import pytest

from vtalab.compiler.errors import CompileError
from vtalab.compiler.topi import Conv2dKnobs, Conv2dShape, Requant, conv2d, conv2d_reference
from vtalab.compiler.vta import build, pipeline
from vtalab.runtime import open_device
from vtalab.spec import preset

from ..rtl.backends import require_rtl

CASES = [  # (shape, knobs, rewritten with reset_multi_loop): 3x3 with the channels in one
    #        tile or peeled over tiles (three loops: kept), 1x1 over 3 channel tiles
    (Conv2dShape(1, 16, 8, 8, 16, 3, 1, 1), Conv2dKnobs(tile_h=4, tile_co=1, tile_ci=2,
                                                         vthreads=2, vthread_axis="h"), False),
    (Conv2dShape(1, 32, 6, 6, 16, 3, 2, 1), Conv2dKnobs(tile_h=3, tile_co=1, tile_ci=1,
                                                         vthreads=1), False),
    (Conv2dShape(1, 24, 8, 8, 32, 1, 1, 0), Conv2dKnobs(tile_h=2, tile_co=2, tile_ci=1,
                                                         vthreads=2, vthread_axis="co"), True),
]


def _run(backend, prog, ins):
    with open_device(backend, prog.cfg, dram_bytes=prog.dram_bytes() + (1 << 16)) as dev:
        outputs, counters = prog.run_io(dev, ins)
    return outputs["out"], counters


def _has(prog, flag):
    return any(getattr(i, flag, False) for i in prog.instructions())


@pytest.mark.parametrize("backend", ["fsim", "rtl"])
@pytest.mark.parametrize("case", range(len(CASES)))
def test_the_first_step_overwrites_with_the_same_outputs_and_no_reset(backend, case,
                                                                     monkeypatch):
    if backend == "rtl":
        require_rtl()
    cfg = preset("tiny")
    sh, knobs, one_loop = CASES[case]
    rq = Requant(shift=8, lo=-100, hi=110)
    sch, args = conv2d(cfg, sh, rq, knobs)
    selective = build(sch, cfg, args, options=("reset_multi_loop",))
    assert _has(selective, "overwrite") == one_loop != _has(selective, "reset")
    sch, args = conv2d(cfg, sh, rq, knobs)
    fused = build(sch, cfg, args)
    monkeypatch.setattr(pipeline, "PASSES",
                        [p for p in pipeline.PASSES if p[0] != "overwrite_first"])
    sch, args = conv2d(cfg, sh, rq, knobs)
    plain = build(sch, cfg, args)
    assert not _has(fused, "reset") and _has(fused, "overwrite")
    rng = np.random.default_rng(case)
    ins = {"data": rng.integers(-128, 128, args[0].shape).astype(np.int8),
           "kernel": rng.integers(-128, 128, args[1].shape).astype(np.int8),
           "bias": rng.integers(-3000, 3000, args[2].shape).astype(np.int32)}
    want = conv2d_reference(ins["data"], ins["kernel"], ins["bias"], sh, rq)
    out_plain, c_plain = _run(backend, plain, ins)
    out_fused, c_fused = _run(backend, fused, ins)
    np.testing.assert_array_equal(out_fused, want)
    np.testing.assert_array_equal(out_plain, want)
    resets = sum(max(i.uop_end - i.uop_bgn, 0) * i.iter_out * i.iter_in
                 for i in plain.instructions() if getattr(i, "reset", False))
    assert resets > 0 and c_fused["gemm_uops"] == c_plain["gemm_uops"] - resets


def test_an_unknown_option_is_refused_by_name():
    cfg = preset("tiny")
    sh, knobs, _ = CASES[0]
    sch, args = conv2d(cfg, sh, Requant(), knobs)
    with pytest.raises(CompileError, match="options must be among .*reset_multi_loop.*not "
                                           r"\['fuse_everything'\]"):
        build(sch, cfg, args, options=("fuse_everything",))
