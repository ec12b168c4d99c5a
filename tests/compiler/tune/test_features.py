"""Loop-IR features for the autotuner's cost model: stable keys, exact hand-checked values."""
import math

import numpy as np
import pytest

from vtalab.spec import preset
from vtalab.compiler import te
from vtalab.compiler.errors import CompileError
from vtalab.compiler.te.build import lower_schedule
from vtalab.compiler.te.lower import schedule_to_func
from vtalab.compiler.topi import Conv2dKnobs, Conv2dShape, DenseKnobs, Requant, conv2d, dense
from vtalab.compiler.tune.features import feature_names, loop_features, to_vector

CFG = preset("default")
SHAPE = Conv2dShape(1, 64, 56, 56, 64, 3, 1, 1)


def _accel_conv(knobs=Conv2dKnobs(28, 14, 2, 2, 2, "co")):
    sch, args = conv2d(CFG, SHAPE, Requant(shift=7), knobs)
    return schedule_to_func(sch, args, "conv")


def _accel_dense():
    sch, args = dense(CFG, 2, 4 * 16, 8 * 16, Requant(shift=7), DenseKnobs(1, 2, 2, "mn", 2))
    return schedule_to_func(sch, args, "dense")


def _cpu_conv():
    from vtalab.compiler.cpu.conv import conv2d_nchw_compute, schedule_conv_nchw
    from vtalab.compiler.target import CpuTarget, Target
    x = te.placeholder((1, 8, 14, 14), "float32", "x")
    w = te.placeholder((16, 8, 3, 3), "float32", "w")
    xp, conv, out = conv2d_nchw_compute(x, w, (1, 1), (1, 1, 1, 1), (1, 1), 1, None, True, 1)
    s = te.create_schedule(out)
    # scheduled for an AVX-512 CPU whatever the host (16 float lanes: each 14-pixel row is
    # one vector; an AVX2 host would pad it to two of 8)
    avx512 = Target("cpu", CpuTarget("x86_64-unknown-linux-gnu", "skylake-avx512", "+avx512f"))
    schedule_conv_nchw(s, xp, conv, out, target=avx512)
    return lower_schedule(s, [x, w, out], "conv2d_nchw")


def _vector_add(n=64):
    a = te.placeholder((n,), "float32", "a")
    b = te.placeholder((n,), "float32", "b")
    c = te.compute((n,), lambda i: a[i] + b[i], "c")
    return lower_schedule(te.create_schedule(c), [a, b, c], "add")


def test_deterministic_across_lowerings():
    assert loop_features(_accel_conv()) == loop_features(_accel_conv())
    assert loop_features(_cpu_conv()) == loop_features(_cpu_conv())


def test_same_keys_in_the_same_order():
    names = feature_names()
    assert len(names) == len(set(names))
    for func in (_accel_conv(), _accel_dense(), _cpu_conv(), _vector_add()):
        feats = loop_features(func)
        assert list(feats) == names
        assert all(isinstance(v, float) and math.isfinite(v) and v >= 0 for v in feats.values())
        vec = to_vector(feats)
        assert vec.dtype == np.float64 and vec.shape == (len(names),)
        np.testing.assert_array_equal(vec, [feats[n] for n in names])


def test_to_vector_needs_every_key():
    feats = loop_features(_vector_add())
    del feats["loop.depth"]
    with pytest.raises(CompileError, match="loop.depth"):
        to_vector(feats)


def test_vector_add_by_hand():
    raw = loop_features(_vector_add(), raw=True)
    nonzero = {k: v for k, v in raw.items() if v}
    assert nonzero == {
        "bytes_read.global": 512.0, "bytes_written.global": 256.0,
        "footprint.global": 768.0, "ops.float.add": 64.0, "stores.execs": 64.0,
        "loop.depth": 1.0, "loop.total_iters": 64.0, "loop.innermost_extent": 64.0,
        "loop.outermost_extent": 64.0, "loop.serial.count": 1.0,
        "loop.serial.extent_product": 64.0}
    logged = loop_features(_vector_add())
    assert logged["bytes_read.global"] == math.log2(513)
    assert logged["ops.float.mul"] == 0.0


def test_accel_conv_dmas_and_reuse():
    raw = loop_features(_accel_conv(), raw=True)
    # loops around the inp copy: n 1, vthread 2, co 1, h tiles 2, w tiles 4, ci steps 4/2
    assert raw["copy_in.nests.inp"] == 1 and raw["copy_in.execs.inp"] == 32
    assert raw["copy_in.mean_bytes.inp"] == 2 * 30 * 16 * 16          # tile_ci rows cols block
    assert raw["copy_in.mean_bytes.wgt"] == 2 * 2 * 9 * 16 * 16
    assert raw["copy_out.nests.acc"] == 1 and raw["copy_out.execs.acc"] == 16
    assert raw["copy_out.mean_bytes.acc"] == 2 * 28 * 14 * 16           # int8 out tile
    assert raw["footprint.inp"] == 2 * (2 * 30 * 16 * 16)               # one per vthread
    assert raw["reduction.stores"] == 1
    assert raw["reduction.execs"] == 64 * 56 * 56 * 64 * 9              # every MAC
    assert raw["ops.int.mul"] >= raw["reduction.execs"]
    assert raw["reuse.inp"] > 1 and raw["reuse.wgt"] > 1
    assert raw["copy_in.nests.local"] == 0 and raw["ops.float.add"] == 0


def test_larger_tile_ci_fewer_bigger_inp_dmas():
    small = loop_features(_accel_conv(Conv2dKnobs(28, 14, 2, 1, 2, "co")), raw=True)
    large = loop_features(_accel_conv(Conv2dKnobs(28, 14, 2, 4, 2, "co")), raw=True)
    assert large["copy_in.execs.inp"] < small["copy_in.execs.inp"]
    assert large["copy_in.mean_bytes.inp"] > small["copy_in.mean_bytes.inp"]
    assert large["copy_in.execs.inp"] * large["copy_in.mean_bytes.inp"] == \
        small["copy_in.execs.inp"] * small["copy_in.mean_bytes.inp"]     # same halo, same bytes


def test_vthreads_show():
    one = loop_features(_accel_conv(Conv2dKnobs(28, 14, 2, 2, 1, "co")), raw=True)
    two = loop_features(_accel_conv(Conv2dKnobs(28, 14, 2, 2, 2, "co")), raw=True)
    assert one["loop.vthread.extent_product"] == 1
    assert two["loop.vthread.count"] == 1 and two["loop.vthread.extent_product"] == 2
    bias = SHAPE.filters * 4                  # int32 per channel, loaded once, not per thread
    assert two["footprint.acc"] - bias == 2 * (one["footprint.acc"] - bias)


def test_cpu_conv_loop_kinds_and_local_reduction():
    raw = loop_features(_cpu_conv(), raw=True)
    assert raw["loop.parallel.count"] == 2 and raw["loop.vectorize.count"] == 3
    assert raw["loop.unroll.count"] >= 3 and raw["loop.vthread.count"] == 0
    assert raw["reduction.execs"] == 16 * 14 * 14 * 8 * 9
    assert raw["ops.float.mul"] == raw["reduction.execs"]
    assert raw["footprint.local"] == 16 * 14 * 4
    assert raw["reuse.local"] > 1 and raw["bytes_read.inp"] == 0
