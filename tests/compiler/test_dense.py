"""Blocked int8 dense with requantisation, bit-exact on the functional simulator."""
import numpy as np
import pytest

from vtalab.spec import preset
from vtalab.compiler.errors import SramCapacityError, ScheduleError, ShapeError
from vtalab.compiler.topi import DenseKnobs, Requant, dense, dense_reference
from vtalab.compiler.vta import build

from .fsim import run_fsim


def run_dense(cfg, m, k, n, rq, knobs, seed=0):
    sch, args = dense(cfg, m, k, n, rq, knobs)
    prog = build(sch, cfg, args)
    rng = np.random.default_rng(seed)
    data = rng.integers(-128, 128, args[0].shape).astype(np.int8)
    weight = rng.integers(-128, 128, args[1].shape).astype(np.int8)
    inputs = {"data": data, "weight": weight}
    bias = None
    if rq.bias:
        bias = rng.integers(-3000, 3000, args[2].shape).astype(np.int32)
        inputs["bias"] = bias
    out = run_fsim(prog, inputs)["out"]
    return out, dense_reference(data, weight, bias, rq), prog


@pytest.mark.parametrize("name", ["default", "tiny", "block8"])
@pytest.mark.parametrize("vt", [1, 2, 4])
def test_dense_bit_exact(name, vt):
    cfg = preset(name)
    m, k, n = 2 * cfg.batch, 4 * cfg.block_in, 8 * cfg.block_out
    out, ref, prog = run_dense(cfg, m, k, n, Requant(shift=5, lo=-90, hi=110),
                               DenseKnobs(tile_m=1, tile_n=2, tile_k=2, vthreads=vt))
    np.testing.assert_array_equal(out, ref)
    assert prog.counters["macs"] == m * k * n


def test_vta_tutorial_matmul_1x256x256():
    cfg = preset("default")
    out, ref, prog = run_dense(cfg, 1, 256, 256, Requant(shift=8, bias=False),
                               DenseKnobs(tile_n=4, tile_k=16, vthreads=2))
    np.testing.assert_array_equal(out, ref)


def test_relu_and_left_shift():
    cfg = preset("tiny")
    out, ref, _ = run_dense(cfg, 8, 16, 16, Requant(shift=-2, lo=-128, hi=127, relu=True),
                            DenseKnobs(tile_m=4, order="nm"))
    np.testing.assert_array_equal(out, ref)
    assert (out >= 0).all()


def test_tile_too_big_names_buffer_and_sizes():
    cfg = preset("tiny")   # wgt_depth 64
    sch, args = dense(cfg, 8, 8 * 16, 8 * 16, Requant(), DenseKnobs(tile_n=16, tile_k=16))
    with pytest.raises(SramCapacityError, match=r"wgt.*256 entries.*wgt_depth is 64"):
        build(sch, cfg, args)


def test_bad_shapes_and_knobs():
    cfg = preset("default")
    with pytest.raises(ShapeError, match="K must be a positive multiple of block_in"):
        dense(cfg, 1, 20, 16)
    with pytest.raises(ScheduleError, match="tile_n must divide"):
        dense(cfg, 1, 16, 48, knobs=DenseKnobs(tile_n=2))


def test_runs_through_runtime_device():
    from vtalab.runtime.device import open_device
    cfg = preset("tiny")
    rq = Requant(shift=4)
    sch, args = dense(cfg, 2, 16, 16, rq, DenseKnobs(tile_n=1, vthreads=2))
    prog = build(sch, cfg, args)
    rng = np.random.default_rng(3)
    ins = {"data": rng.integers(-128, 128, args[0].shape).astype(np.int8),
           "weight": rng.integers(-128, 128, args[1].shape).astype(np.int8),
           "bias": rng.integers(-999, 999, args[2].shape).astype(np.int32)}
    dev = open_device("fsim", cfg)
    try:
        out = prog.run_io(dev, ins)[0]["out"]
    finally:
        dev.close()
    np.testing.assert_array_equal(out, dense_reference(ins["data"], ins["weight"], ins["bias"], rq))
