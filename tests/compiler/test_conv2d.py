"""conv2d on packed layouts, bit-exact on the functional simulator."""
import numpy as np
import pytest

from vtalab.spec import preset
from vtalab.compiler.topi import (Conv2dKnobs, Conv2dShape, Requant, conv2d, conv2d_reference,
                                  default_conv2d_knobs)
from vtalab.compiler.vta import build

from .fsim import run_fsim

# every distinct conv2d of ResNet-18 after the first layer: (C, H, CO, K, stride, pad)
RESNET18 = [(64, 56, 64, 3, 1, 1), (64, 56, 128, 3, 2, 1), (64, 56, 128, 1, 2, 0),
            (128, 28, 128, 3, 1, 1), (128, 28, 256, 3, 2, 1), (128, 28, 256, 1, 2, 0),
            (256, 14, 256, 3, 1, 1), (256, 14, 512, 3, 2, 1), (256, 14, 512, 1, 2, 0),
            (512, 7, 512, 3, 1, 1)]


def run_conv(cfg, sh, knobs, rq=Requant(shift=7, lo=-120, hi=120), seed=0):
    sch, args = conv2d(cfg, sh, rq, knobs)
    prog = build(sch, cfg, args)
    rng = np.random.default_rng(seed)
    ins = {"data": rng.integers(-128, 128, args[0].shape).astype(np.int8),
           "kernel": rng.integers(-128, 128, args[1].shape).astype(np.int8)}
    bias = None
    if rq.bias:
        bias = ins["bias"] = rng.integers(-5000, 5000, args[2].shape).astype(np.int32)
    out = run_fsim(prog, ins)["out"]
    ref = conv2d_reference(ins["data"], ins["kernel"], bias, sh, rq)
    return out, ref, prog


@pytest.mark.parametrize("c,h,co,k,s,p", RESNET18)
def test_resnet18_layers_default(c, h, co, k, s, p):
    cfg = preset("default")
    sh = Conv2dShape(1, c, h, h, co, k, s, p)
    out, ref, prog = run_conv(cfg, sh, default_conv2d_knobs(cfg, sh, vthreads=2))
    np.testing.assert_array_equal(out, ref)
    assert prog.counters["macs"] == sh.macs


@pytest.mark.parametrize("vt,axis", [(1, "co"), (2, "co"), (4, "co"), (2, "h"), (4, "h")])
@pytest.mark.parametrize("name", ["tiny", "block8"])
def test_vthreads_on_two_presets(name, vt, axis):
    cfg = preset(name)
    sh = Conv2dShape(1, 16, 8, 8, 32, 3, 1, 1)
    out, ref, _ = run_conv(cfg, sh, Conv2dKnobs(tile_h=2, tile_co=1, tile_ci=1, vthreads=vt,
                                                vthread_axis=axis))
    np.testing.assert_array_equal(out, ref)


@pytest.mark.parametrize("k,s,p", [(5, 1, 2), (3, 3, 0), (2, 2, 1), (1, 1, 0), (7, 2, 3)])
def test_odd_kernels_strides_pads(k, s, p):
    cfg = preset("tiny")
    sh = Conv2dShape(1, 8, 11, 11, 8, k, s, p)
    out, ref, _ = run_conv(cfg, sh, Conv2dKnobs(tile_h=1), Requant(shift=4, bias=False))
    np.testing.assert_array_equal(out, ref)


def test_vta_tutorial_resnet_layer_two_vthreads():
    cfg = preset("default")
    sh = Conv2dShape(1, 256, 14, 14, 256, 3, 1, 1)
    out, ref, _ = run_conv(cfg, sh, Conv2dKnobs(tile_h=7, tile_co=2, tile_ci=4, vthreads=2))
    np.testing.assert_array_equal(out, ref)
