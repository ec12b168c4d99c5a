"""The blocked matmul workload: bit-exact against numpy for tilings, presets, vthreads."""
import numpy as np
import pytest

from vtalab.runtime import ProgramBuilder, open_device
from vtalab.runtime.workloads import BlockedMatmul, MatmulTiles, choose_tiles, matmul_reference
from vtalab.spec import preset
from vtalab.spec.errors import ProgramError


def run_matmul(cfg_name, m, k, n, vthreads, tiles=None, seed=0):
    rng = np.random.default_rng(seed)
    a = rng.integers(-128, 128, (m, k))
    w = rng.integers(-128, 128, (n, k))
    bias = rng.integers(-30000, 30000, n)
    with open_device("fsim", cfg_name) as dev:
        mm = BlockedMatmul(dev.cfg, m, k, n, shift=7, vthreads=vthreads, tiles=tiles)
        bufs = mm.place(dev, a, w, bias)
        builder = ProgramBuilder(dev)
        mm.build(builder, bufs)
        counters = builder.synchronize()
        return mm.result(bufs), matmul_reference(a, w, bias, 7), counters


@pytest.mark.parametrize("cfg_name", ["tiny", "default"])
@pytest.mark.parametrize("vthreads", [1, 2])
def test_matmul_matches_numpy(cfg_name, vthreads):
    got, want, counters = run_matmul(cfg_name, 32, 64, 48, vthreads)
    np.testing.assert_array_equal(got, want)
    assert counters["macs"] == 32 * 64 * 48


@pytest.mark.parametrize("tiles", [MatmulTiles(1, 1, 1), MatmulTiles(4, 2, 8), MatmulTiles(8, 6, 2)])
def test_matmul_any_dividing_tiles(tiles):
    got, want, _ = run_matmul("tiny", 64, 64, 48, 2, tiles=tiles)
    np.testing.assert_array_equal(got, want)


def test_tiles_respect_buffer_capacity():
    cfg = preset("default")
    t = choose_tiles(cfg, 1024, 64, 64, vthreads=2)
    assert t.tm * t.tk * 2 <= cfg.inp_depth and t.tn * t.tk * 2 <= cfg.wgt_depth
    assert t.tm * t.tn * 2 + t.tn <= cfg.acc_depth
    with pytest.raises(ProgramError, match="must divide"):
        BlockedMatmul(cfg, 32, 64, 48, tiles=MatmulTiles(3, 1, 1))


