"""Attention's MatMuls of two computed operands (Q x K^T, attn x V) on the accelerator in
int8: quantised to batch_dense (the second operand transposed and packed per batch index,
loaded from DRAM as the weights), bit-exact on the functional simulator against the int8
reference (every value), every MAC of the model on the accelerator, the RTL equal to the
functional simulator; MatMuls whose batch axes differ stay float with the reason."""
import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import helper  # noqa: E402

from vtalab.compiler.exec import compile_model  # noqa: E402
from vtalab.compiler.graph import run_int8  # noqa: E402
from vtalab.compiler.graph.batch_layout import pack_batched, unpack_batched  # noqa: E402
from vtalab.runtime.layout import pack_array  # noqa: E402

from ...rtl.backends import require_rtl  # noqa: E402
from .conftest import samples, values_differ  # noqa: E402
from .test_ops_int8 import _model, transformer_model  # noqa: E402

SHAPE = (1, 3, 5, 20)     # 3 heads, 5 tokens, 20 wide: nothing a multiple of a block


def attention_model():
    """scores = relu(x @ x^T); y = scores @ x (both MatMuls of computed operands)."""
    n = helper.make_node
    nodes = [n("Transpose", ["x"], ["xt"], perm=[0, 1, 3, 2]),
             n("MatMul", ["x", "xt"], ["scores"]), n("Relu", ["scores"], ["p"]),
             n("MatMul", ["p", "x"], ["y"])]
    return _model(nodes, SHAPE, SHAPE, [])


def _check(module, shape, seed):
    x = samples(shape, 1, seed)[0]
    outputs, profile = module.run(x, keep=True)
    assert values_differ(outputs, run_int8(module.graph, x, keep_all=True)) == []
    return profile


@pytest.mark.parametrize("config", ["default", "tiny"])
def test_matmuls_of_computed_operands_run_on_the_accelerator(config):
    module = compile_model(attention_model(), config, calibration=samples(SHAPE, 6, 3))
    batched = [s for s in module.steps if s.op == "accel_batch_dense"]
    assert len(batched) == 2 and all(s.target == "accel" for s in batched)
    assert "both operands computed" in batched[0].reason
    totals = _check(module, SHAPE, 9).totals()
    assert totals["accel_macs"] == totals["macs"] >= 3 * 5 * 20 * 5 * 2


def test_transformer_block_has_every_mac_on_the_accelerator():
    module = compile_model(transformer_model(), "default",
                           calibration=samples((1, 8, 16), 8, 3))
    assert sum(s.op == "accel_batch_dense" for s in module.steps) == 2
    totals = _check(module, (1, 8, 16), 12).totals()
    assert totals["accel_macs"] == totals["macs"] > 0


def test_vit_attention_on_the_accelerator_bit_exact():
    torch_vit = pytest.importorskip("vtalab.compiler.models.torch_vit",
                                    exc_type=ImportError)
    from vtalab.compiler.torch_import import compile_torch
    model = torch_vit.vit(2, image=32, dim=64, heads=4, mlp=128, num_classes=10)
    shape = (1, 3, 32, 32)
    module = compile_torch(model, samples(shape, 1, 6), calibration=samples(shape, 8, 7))
    assert sum(s.op == "accel_batch_dense" and s.target == "accel"
               for s in module.steps) == 4                      # 2 per layer
    totals = _check(module, shape, 8).totals()
    assert totals["accel_macs"] == totals["macs"]


def test_matmul_with_other_batch_axes_stays_float():
    n = helper.make_node
    nodes = [n("ReduceMean", ["x", "axes"], ["m"], keepdims=0),          # [5, 20], computed
             n("Transpose", ["m"], ["mt"], perm=[1, 0]),
             n("MatMul", ["x", "mt"], ["y"])]                        # [1, 3, 5, 20] @ [20, 5]
    axes = ("axes", np.array([0, 1], np.int64))
    module = compile_model(_model(nodes, SHAPE, (1, 3, 5, 5), [axes], opset=18), "default",
                           calibration=samples(SHAPE, 4, 3))
    step = next(s for s in module.steps if s.op == "matmul")
    assert step.target == "cpu" and "float32 matmul: not quantised" in step.reason
    _check(module, SHAPE, 5)


def test_batched_packing_is_the_plain_packing_per_batch_index():
    x = np.random.default_rng(0).integers(-128, 128, (3, 5, 20)).astype(np.int8)
    packed = pack_batched(x, (1, 16), 1)
    assert packed.shape == (3, 5, 2, 1, 16)
    assert all(np.array_equal(packed[g], pack_array(x[g], (1, 16))) for g in range(3))
    assert np.array_equal(unpack_batched(packed, x.shape, 1), x)


def test_batch_dense_on_the_rtl_equals_the_functional_simulator():
    require_rtl()
    module = compile_model(attention_model(), "tiny", calibration=samples(SHAPE, 6, 3))
    x = samples(SHAPE, 1, 10)[0]
    want, _ = module.run(x)
    got, profile = module.run(x, backend="rtl")
    for name in want:
        np.testing.assert_array_equal(got[name], want[name])
    batched = [r for r in profile.accel if r.op == "accel_batch_dense"]
    assert len(batched) == 2 and all(r.cycles > 0 for r in batched)
