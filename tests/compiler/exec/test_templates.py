"""Fused accelerator templates: residual, per-channel and split shifts, bit-exact on fsim."""
import numpy as np
import pytest

from vtalab.compiler.exec.lower import Unsupported, lower_accel
from vtalab.compiler.exec.templates import (VEC, Epilogue, fused_conv2d, fused_dense,
                                            split_shift, split_shift_vector)
from vtalab.compiler.graph.int8_ref import int_conv2d, shift_right, wrap32
from vtalab.runtime.layout import pack_array, unpack_array
from vtalab.compiler.topi import Conv2dKnobs, Conv2dShape, DenseKnobs
from vtalab.compiler.vta import build
from vtalab.spec import preset
from vtalab.spec.isa import shift_range

from ..fsim import run_fsim


@pytest.mark.parametrize("name", ["default", "block8"])
def test_split_shift_stays_in_the_alu_field(name):
    lo, hi = shift_range(preset(name))
    assert (lo, hi) == (-16, 15)                # acc_bits 32: a signed 5-bit amount
    for amount in (0, 5, 15, 16, 31, 40, -16, -17, -40):
        steps = split_shift(amount, lo, hi)
        assert sum(steps) == amount and all(lo <= s <= hi for s in steps)
    vec = np.array([0, 3, 20, -20, 47])
    chunks = split_shift_vector(vec, lo, hi)
    assert np.array_equal(sum(chunks), vec) and all(np.abs(c).max() <= 16 for c in chunks)


def test_shift_range_follows_the_accumulator_width():
    assert shift_range(preset("tiny").replace(acc_bits=16)) == (-8, 7)


def _inputs(args, rng):
    return {a.name: rng.integers(-100, 100, a.shape).astype(a.dtype.numpy) for a in args[:-1]}


def _epilogue_ref(acc, bias, residual, rshift, shift, lo, hi):
    acc = wrap32(acc.astype(np.int64) + bias).astype(np.int64)
    acc = wrap32(acc + shift_right(residual.astype(np.int32), rshift)).astype(np.int64)
    return np.clip(shift_right(wrap32(acc), shift), lo, hi).astype(np.int8)


@pytest.mark.parametrize("vthreads", [1, 2])
def test_conv_with_residual_and_per_channel_split_shift(vthreads):
    cfg = preset("tiny")
    sh = Conv2dShape(1, 16, 6, 6, 16, 3, 1, 1)
    ep = Epilogue(bias=True, residual=True, residual_shifts=(-9,), shifts=(VEC, VEC),
                  lo=-100, hi=120)
    sch, args = fused_conv2d(cfg, sh, ep, Conv2dKnobs(tile_h=2, vthreads=vthreads))
    prog = build(sch, cfg, args)
    rng = np.random.default_rng(0)
    ins = _inputs(args, rng)
    shift = rng.integers(10, 25, 16)                       # per channel, some beyond 15
    first, second = split_shift_vector(shift, *shift_range(cfg))
    ins["shift0"] = np.broadcast_to(first.reshape(2, 1, 8), (2, 1, 8)).astype(np.int32)
    ins["shift1"] = np.broadcast_to(second.reshape(2, 1, 8), (2, 1, 8)).astype(np.int32)
    out = run_fsim(prog, ins)["out"]
    x, w = unpack_array(ins["data"], (1, 16, 6, 6)), unpack_array(ins["kernel"], (16, 16, 3, 3))
    acc = int_conv2d(x, w, (1, 1), (1, 1, 1, 1), (1, 1), 1)
    want = _epilogue_ref(acc, ins["bias"][:, 0].reshape(1, 16, 1, 1),
                         unpack_array(ins["residual"], (1, 16, 6, 6)), -9,
                         shift.reshape(1, 16, 1, 1), -100, 120)
    np.testing.assert_array_equal(out, pack_array(want, (1, 8)))


def test_dense_with_residual_on_default():
    cfg = preset("default")
    ep = Epilogue(bias=True, residual=True, residual_shifts=(3,),
                  shifts=tuple(split_shift(20, *shift_range(cfg))),
                  lo=0, hi=127)
    sch, args = fused_dense(cfg, 1, 64, 48, ep, DenseKnobs(tile_n=1, tile_k=2, vthreads=1))
    prog = build(sch, cfg, args)
    ins = _inputs(args, np.random.default_rng(1))
    out = run_fsim(prog, ins)["out"]
    x, w = unpack_array(ins["data"], (1, 64)), unpack_array(ins["weight"], (48, 64))
    acc = wrap32(x.astype(np.int64) @ w.astype(np.int64).T)
    want = _epilogue_ref(acc, ins["bias"][:, 0].reshape(1, 48),
                         unpack_array(ins["residual"], (1, 48)), 3, 20, 0, 127)
    np.testing.assert_array_equal(out, pack_array(want, (1, 16)))


@pytest.mark.parametrize("vthreads", [1, 2])
def test_conv_with_residual_as_identity_gemm(vthreads):
    # int8 residual in inp, times 2**6 * I (one GEMM micro-op per entry), then << 3:
    # the same as the int32 residual shifted left by 9, with the bias folded into SAT.
    cfg = preset("tiny")
    sh = Conv2dShape(1, 16, 6, 6, 16, 3, 1, 1)
    ep = Epilogue(bias=True, residual=True, residual_shifts=(-3,), shifts=(12,), lo=0,
                  hi=127, residual_gemm=True)
    sch, args = fused_conv2d(cfg, sh, ep, Conv2dKnobs(tile_h=2, vthreads=vthreads))
    prog = build(sch, cfg, args)
    text = "\n".join(prog.disasm())
    # the compute module DMAs only the bias vectors into acc, once (both channel blocks),
    # the residual goes to inp
    acc_loads = [ln for ln in text.splitlines() if ln.startswith("LOAD   ACC")]
    assert len(acc_loads) == 1 and "x_size=2 " in acc_loads[0] and "@bias" in acc_loads[0]
    rng = np.random.default_rng(3)
    ins = _inputs(args, rng)
    ins["residual"] = rng.integers(-128, 128, ins["residual"].shape).astype(np.int8)
    ins["residual_eye"] = (np.eye(8, dtype=np.int8) << 6).reshape(1, 1, 8, 8)
    out = run_fsim(prog, ins)["out"]
    x, w = unpack_array(ins["data"], (1, 16, 6, 6)), unpack_array(ins["kernel"], (16, 16, 3, 3))
    acc = int_conv2d(x, w, (1, 1), (1, 1, 1, 1), (1, 1), 1)
    want = _epilogue_ref(acc, ins["bias"][:, 0].reshape(1, 16, 1, 1),
                         unpack_array(ins["residual"], (1, 16, 6, 6)), -9, 12, 0, 127)
    np.testing.assert_array_equal(out, pack_array(want, (1, 8)))
    assert "ALU    SAT" in text


def test_unsupported_conv_is_reported_not_miscompiled(resnet_module):
    graph = resnet_module.graph
    node = next(n for n in graph.nodes if n.op == "accel_conv2d")
    with pytest.raises(Unsupported, match="pads must be equal"):
        lower_accel(graph, node.with_attrs(pads=(1, 1, 2, 2)), resnet_module.cfg)
