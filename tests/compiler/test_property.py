"""Random legal schedules (tile sizes, loop orders, virtual threads) compile and are exact."""
import numpy as np
from hypothesis import HealthCheck, given, settings, strategies as st

from vtalab.spec import preset
from vtalab.compiler.errors import SramCapacityError
from vtalab.compiler.topi import (Conv2dKnobs, Conv2dShape, DenseKnobs, Requant, conv2d,
                                  conv2d_reference, dense, dense_reference)
from vtalab.compiler.vta import build

from .fsim import run_fsim

CFG = preset("tiny")


def _divisor(draw, n):
    return draw(st.sampled_from([d for d in range(1, n + 1) if n % d == 0]))


@st.composite
def dense_cases(draw):
    mb, kb, nb = draw(st.integers(1, 4)), draw(st.integers(1, 4)), draw(st.integers(1, 6))
    tn = _divisor(draw, nb)
    vt = _divisor(draw, nb // tn)
    kn = DenseKnobs(tile_m=_divisor(draw, mb), tile_n=tn, tile_k=_divisor(draw, kb),
                    order=draw(st.sampled_from(["mn", "nm"])), vthreads=vt)
    rq = Requant(shift=draw(st.integers(-3, 12)), lo=draw(st.integers(-128, 0)),
                 hi=draw(st.integers(1, 127)), bias=draw(st.booleans()))
    return mb, kb, nb, kn, rq, draw(st.integers(0, 2**16))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(dense_cases())
def test_random_dense_schedules(case):
    mb, kb, nb, kn, rq, seed = case
    m, k, n = mb * CFG.batch, kb * CFG.block_in, nb * CFG.block_out
    sch, args = dense(CFG, m, k, n, rq, kn)
    prog = build(sch, CFG, args)
    rng = np.random.default_rng(seed)
    d = rng.integers(-128, 128, args[0].shape).astype(np.int8)
    w = rng.integers(-128, 128, args[1].shape).astype(np.int8)
    ins = {"data": d, "weight": w}
    b = None
    if rq.bias:
        b = ins["bias"] = rng.integers(-4000, 4000, args[2].shape).astype(np.int32)
    np.testing.assert_array_equal(run_fsim(prog, ins)["out"], dense_reference(d, w, b, rq))


@st.composite
def conv_cases(draw):
    k = draw(st.sampled_from([1, 2, 3]))
    s = draw(st.sampled_from([1, 2]))
    p = draw(st.integers(0, k - 1))
    hw = draw(st.integers(max(k, 3), 9))
    cb, cob = draw(st.integers(1, 2)), draw(st.integers(1, 4))
    sh = Conv2dShape(1, cb * CFG.block_in, hw, hw, cob * CFG.block_out, k, s, p)
    oh, ow = sh.out_hw
    tco = _divisor(draw, cob)
    axis = draw(st.sampled_from(["co", "h"]))
    th = _divisor(draw, oh)
    tiles = cob // tco if axis == "co" else oh // th
    vt = draw(st.sampled_from([d for d in (1, 2, 3, 4) if tiles % d == 0]))
    kn = Conv2dKnobs(tile_h=th, tile_w=_divisor(draw, ow), tile_co=tco,
                     tile_ci=_divisor(draw, cb), vthreads=vt, vthread_axis=axis)
    return sh, kn, draw(st.integers(0, 2**16))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(conv_cases())
def test_random_conv2d_schedules(case):
    sh, kn, seed = case
    rq = Requant(shift=5, bias=True)
    sch, args = conv2d(CFG, sh, rq, kn)
    try:
        prog = build(sch, CFG, args)
    except SramCapacityError:
        return                     # a clear refusal is a legal outcome for a too-big tile
    rng = np.random.default_rng(seed)
    ins = {"data": rng.integers(-128, 128, args[0].shape).astype(np.int8),
           "kernel": rng.integers(-128, 128, args[1].shape).astype(np.int8),
           "bias": rng.integers(-4000, 4000, args[2].shape).astype(np.int32)}
    ref = conv2d_reference(ins["data"], ins["kernel"], ins["bias"], sh, rq)
    np.testing.assert_array_equal(run_fsim(prog, ins)["out"], ref)
