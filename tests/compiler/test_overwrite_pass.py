"""compiler/vta/passes/overwrite.py (optional pass ``overwrite_first``): a reduction's reset
pass becomes its first step as GEMM_OVERWRITE; the outputs stay bit-exact on the functional
simulator and the RTL, and exactly the reset micro-ops disappear."""
import numpy as np
import pytest

from vtalab.compiler.errors import CompileError
from vtalab.compiler.topi import Conv2dKnobs, Conv2dShape, Requant, conv2d, conv2d_reference
from vtalab.compiler.vta import build
from vtalab.runtime import open_device
from vtalab.spec import preset

from ..rtl.backends import require_rtl

CASES = [  # (shape, knobs): the channel loop in one tile or peeled over tiles, 3x3 and 1x1
    (Conv2dShape(1, 16, 8, 8, 16, 3, 1, 1), Conv2dKnobs(tile_h=4, tile_co=1, tile_ci=2,
                                                         vthreads=2, vthread_axis="h")),
    (Conv2dShape(1, 32, 6, 6, 16, 3, 2, 1), Conv2dKnobs(tile_h=3, tile_co=1, tile_ci=1,
                                                         vthreads=1)),
    (Conv2dShape(1, 24, 8, 8, 32, 1, 1, 0), Conv2dKnobs(tile_h=2, tile_co=2, tile_ci=1,
                                                         vthreads=2, vthread_axis="co")),
]


def _run(backend, prog, ins):
    with open_device(backend, prog.cfg, dram_bytes=prog.dram_bytes() + (1 << 16)) as dev:
        outputs, counters = prog.run_io(dev, ins)
    return outputs["out"], counters


@pytest.mark.parametrize("backend", ["fsim", "rtl"])
@pytest.mark.parametrize("case", range(len(CASES)))
def test_the_first_step_overwrites_with_the_same_outputs_and_no_reset(backend, case):
    if backend == "rtl":
        require_rtl()
    cfg = preset("tiny")
    sh, knobs = CASES[case]
    rq = Requant(shift=8, lo=-100, hi=110)
    sch, args = conv2d(cfg, sh, rq, knobs)
    plain = build(sch, cfg, args)
    sch, args = conv2d(cfg, sh, rq, knobs)
    fused = build(sch, cfg, args, options=("overwrite_first",))
    insns = fused.instructions()
    assert not any(getattr(i, "reset", False) for i in insns)
    assert any(getattr(i, "overwrite", False) for i in insns)
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
    sh, knobs = CASES[0]
    sch, args = conv2d(cfg, sh, Requant(), knobs)
    with pytest.raises(CompileError, match="options must be among .*overwrite_first.*not "
                                           r"\['fuse_everything'\]"):
        build(sch, cfg, args, options=("fuse_everything",))
