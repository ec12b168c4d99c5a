"""A residual accumulated into the conv's own entries: the accumulator starts from the bias
(a MOV, no reset), is shifted right by the pre-shift, takes the residual x 2**k * identity
GEMM and ends in one SAT. Bit-exact with the residual added at full scale wherever no sum
wraps, and only chosen where the weights prove that."""
import numpy as np
import pytest

from vtalab.compiler.exec.lower import _residual_into_acc, epilogue_of
from vtalab.compiler.exec.templates import Epilogue, fused_conv2d, fused_dense
from vtalab.compiler.graph.int8_ref import int_conv2d, shift_right, wrap32
from vtalab.compiler.topi import Conv2dKnobs, Conv2dShape, DenseKnobs
from vtalab.compiler.vta import build
from vtalab.runtime.layout import pack_array, unpack_array
from vtalab.spec import preset

from ..fsim import run_fsim

# r << 9 with s = 12: 2**6 * I as the residual's weight after a pre-shift of 3, then 9
EP = Epilogue(bias=True, residual=True, shifts=(9,), lo=0, hi=127, residual_gemm=True,
              residual_into_acc=True, preshifts=(3,))


def _full_scale(acc, bias, residual, m, s, lo, hi):
    """clip((acc + bias + residual * 2**m) >> s): what the fused form must equal."""
    x = wrap32(acc.astype(np.int64) + bias + (residual.astype(np.int64) << m))
    return np.clip(shift_right(x, s), lo, hi).astype(np.int8)


def _operands(args, rng):
    ins = {a.name: rng.integers(-128, 128, a.shape).astype(a.dtype.numpy) for a in args[:-1]}
    ins["bias"] = rng.integers(-20000, 20000, ins["bias"].shape).astype(np.int32)
    bo = ins["residual_eye"].shape[-1]
    ins["residual_eye"] = (np.eye(bo, dtype=np.int8) << 6).reshape(1, 1, bo, bo)
    return ins


@pytest.mark.parametrize("vthreads", [1, 2])
def test_conv_residual_into_acc_is_exact(vthreads):
    cfg = preset("tiny")
    sh = Conv2dShape(1, 16, 6, 6, 16, 3, 1, 1)
    sch, args = fused_conv2d(cfg, sh, EP, Conv2dKnobs(tile_h=2, vthreads=vthreads))
    prog = build(sch, cfg, args)
    text = "\n".join(prog.disasm())
    assert "ALU    MOV" in text and "ALU    SAT" in text and "ALU    ADD" not in text
    gemms = [ln for ln in text.splitlines() if ln.startswith("GEMM")]
    assert gemms and not any("reset=1" in ln for ln in gemms)   # the MOV starts each entry
    ins = _operands(args, np.random.default_rng(5))
    out = run_fsim(prog, ins)["out"]
    x, w = unpack_array(ins["data"], (1, 16, 6, 6)), unpack_array(ins["kernel"], (16, 16, 3, 3))
    acc = int_conv2d(x, w, (1, 1), (1, 1, 1, 1), (1, 1), 1)
    want = _full_scale(acc, ins["bias"][:, 0].reshape(1, 16, 1, 1),
                       unpack_array(ins["residual"], (1, 16, 6, 6)), 9, 12, 0, 127)
    assert len(np.unique(want)) > 20             # the clip does not hide the sums
    np.testing.assert_array_equal(out, pack_array(want, (1, 8)))


def test_dense_residual_into_acc_is_exact():
    cfg = preset("default")
    sch, args = fused_dense(cfg, 1, 64, 48, EP, DenseKnobs(tile_n=1, tile_k=2, vthreads=1))
    ins = _operands(args, np.random.default_rng(6))
    out = run_fsim(build(sch, cfg, args), ins)["out"]
    x, w = unpack_array(ins["data"], (1, 64)), unpack_array(ins["weight"], (48, 64))
    acc = wrap32(x.astype(np.int64) @ w.astype(np.int64).T)
    want = _full_scale(acc, ins["bias"][:, 0].reshape(1, 48),
                       unpack_array(ins["residual"], (1, 48)), 9, 12, 0, 127)
    np.testing.assert_array_equal(out, pack_array(want, (1, 16)))


def _residual_node(module):
    graph = module.graph
    return graph, next(n for n in graph.nodes if n.op == "accel_conv2d" and len(n.inputs) > 3
                       and n.inputs[3])


def test_resnet_residual_layers_accumulate_into_acc(resnet_module):
    graph, node = _residual_node(resnet_module)
    cfg = resnet_module.cfg
    blocks = graph.types[node.inputs[1]].shape[0]
    ep, consts = epilogue_of(graph, node, blocks, cfg)
    m, s = -int(node.attr("residual_shr")), int(node.attr("shift"))
    k = min(m, 6)
    assert ep.residual_into_acc and ep.residual_shifts == ()
    assert sum(ep.preshifts) == m - k and sum(ep.preshifts) + sum(ep.shifts) == s
    assert np.array_equal(consts["residual_eye"][0, 0], np.eye(cfg.block_out) * 2 ** k)


def test_into_acc_only_where_no_sum_can_wrap(resnet_module):
    graph, node = _residual_node(resnet_module)
    cfg = resnet_module.cfg
    blocks = graph.types[node.inputs[1]].shape[0]
    bias = np.zeros((blocks, cfg.batch, cfg.block_out), np.int32)
    assert _residual_into_acc(graph, node, cfg, bias) is not None
    bias[0, 0, 3] = (1 << 31) - (1 << 20)        # |bias| alone nearly at the int32 limit
    assert _residual_into_acc(graph, node, cfg, bias) is None
    bias[:] = 0
    m = -int(node.attr("residual_shr"))
    for changed in (node.with_attrs(residual_shr=2),              # a right-shifted residual
                    node.with_attrs(residual_shr=-(m + 7), shift=m),  # s below the pre-shift
                    node.with_attrs(shift=np.arange(blocks * cfg.block_out) % 3 + 9)):
        assert _residual_into_acc(graph, changed, cfg, bias) is None
        ep, _ = epilogue_of(graph, changed, blocks, cfg)
        assert not ep.residual_into_acc and ep.residual
