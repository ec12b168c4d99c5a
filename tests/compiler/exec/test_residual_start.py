"""A residual as the accumulator's start: the int8 residual times 2**k * identity (one
GEMM_OVERWRITE micro-op per entry, no reset), aligned by its shifts, then the conv
accumulates on top and one SAT adds the bias, shifts and clips. Bit-exact with the
residual added last (wrapping adds commute), for left and right alignments."""
import numpy as np
import pytest

from vtalab.compiler.exec.lower import epilogue_of
from vtalab.compiler.exec.templates import Epilogue, fused_conv2d, fused_dense
from vtalab.compiler.graph.int8_ref import int_conv2d, shift_right, wrap32
from vtalab.compiler.topi import Conv2dKnobs, Conv2dShape, DenseKnobs
from vtalab.compiler.vta import build
from vtalab.runtime.layout import pack_array, unpack_array
from vtalab.spec import preset

from ..fsim import run_fsim


def _full(acc, bias, residual, rshr, s, lo, hi):
    """clip((acc + bias + shr(residual, rshr)) >> s): the graph's semantics."""
    x = wrap32(acc.astype(np.int64) + bias
               + shift_right(residual.astype(np.int32), rshr).astype(np.int64))
    return np.clip(shift_right(x, s), lo, hi).astype(np.int8)


def _operands(args, rng, k):
    ins = {a.name: rng.integers(-128, 128, a.shape).astype(a.dtype.numpy) for a in args[:-1]}
    ins["bias"] = rng.integers(-20000, 20000, ins["bias"].shape).astype(np.int32)
    bo = ins["residual_eye"].shape[-1]
    ins["residual_eye"] = (np.eye(bo, dtype=np.int8) << k).reshape(1, 1, bo, bo)
    return ins


# (eye exponent k, residual steps after it, the graph's residual_shr): r << 9 as
# (r * 2**6) << 3, and r >> 2 as r * 1 >> 2
CASES = [(6, (-3,), -9), (0, (2,), 2)]


@pytest.mark.parametrize("vthreads", [1, 2])
@pytest.mark.parametrize("k, steps, rshr", CASES)
def test_conv_starts_from_the_residual(vthreads, k, steps, rshr):
    cfg = preset("tiny")
    sh = Conv2dShape(1, 16, 6, 6, 16, 3, 1, 1)
    ep = Epilogue(bias=True, residual=True, residual_shifts=steps, shifts=(12,), lo=0, hi=127,
                  residual_gemm=True)
    sch, args = fused_conv2d(cfg, sh, ep, Conv2dKnobs(tile_h=2, vthreads=vthreads))
    prog = build(sch, cfg, args)
    text = prog.disasm()
    assert any(ln.startswith("GEMM_OVERWRITE") for ln in text)      # the residual, first
    assert not any(ln.startswith("GEMM") and "reset=1" in ln for ln in text)
    assert not any(ln.startswith("ALU    ADD") for ln in text)
    ins = _operands(args, np.random.default_rng(5), k)
    out = run_fsim(prog, ins)["out"]
    x, w = unpack_array(ins["data"], (1, 16, 6, 6)), unpack_array(ins["kernel"], (16, 16, 3, 3))
    acc = int_conv2d(x, w, (1, 1), (1, 1, 1, 1), (1, 1), 1)
    want = _full(acc, ins["bias"][:, 0].reshape(1, 16, 1, 1),
                 unpack_array(ins["residual"], (1, 16, 6, 6)), rshr, 12, 0, 127)
    assert len(np.unique(want)) > 20             # the clip does not hide the sums
    np.testing.assert_array_equal(out, pack_array(want, (1, 8)))


def test_dense_starts_from_the_residual():
    cfg = preset("default")
    ep = Epilogue(bias=True, residual=True, residual_shifts=(-3,), shifts=(12,), lo=0, hi=127,
                  residual_gemm=True)
    sch, args = fused_dense(cfg, 1, 64, 48, ep, DenseKnobs(tile_n=1, tile_k=2, vthreads=1))
    ins = _operands(args, np.random.default_rng(6), 6)
    out = run_fsim(build(sch, cfg, args), ins)["out"]
    x, w = unpack_array(ins["data"], (1, 64)), unpack_array(ins["weight"], (48, 64))
    acc = wrap32(x.astype(np.int64) @ w.astype(np.int64).T)
    want = _full(acc, ins["bias"][:, 0].reshape(1, 48),
                 unpack_array(ins["residual"], (1, 48)), -9, 12, 0, 127)
    np.testing.assert_array_equal(out, pack_array(want, (1, 16)))


def test_resnet_residual_layers_start_from_the_residual(resnet_module):
    graph, cfg = resnet_module.graph, resnet_module.cfg
    nodes = [n for n in graph.nodes if n.op == "accel_conv2d" and len(n.inputs) > 3
             and n.inputs[3]]
    assert nodes
    for node in nodes:
        blocks = graph.types[node.inputs[1]].shape[0]
        ep, consts = epilogue_of(graph, node, blocks, cfg)
        m = -int(node.attr("residual_shr"))
        k = min(max(m, 0), 6)
        assert ep.residual_gemm and sum(ep.residual_shifts) == k - m
        assert np.array_equal(consts["residual_eye"][0, 0], np.eye(cfg.block_out) * 2 ** k)
