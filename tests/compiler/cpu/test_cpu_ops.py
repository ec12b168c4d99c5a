"""Pooling, elementwise, softmax, batch norm, layout transforms and int8 quantisation."""
import numpy as np
import pytest

from vtalab.compiler import cpu
from vtalab.compiler.errors import ShapeError

from .reference import maxpool_ref, ort_op

RNG = np.random.default_rng(11)


def _x(*shape, scale=1.0):
    return (RNG.standard_normal(shape) * scale).astype("float32")


@pytest.mark.parametrize("shape,k,s,pads", [((2, 3, 13, 17), 3, 2, (1, 1, 1, 1)),
                                            ((1, 4, 12, 11), 2, 2, (0, 0, 0, 0)),
                                            ((1, 2, 9, 8), 3, 1, (1, 0, 1, 2))])
def test_pools_match_onnxruntime(shape, k, s, pads):
    x = _x(*shape)
    attrs = dict(kernel_shape=[k, k], strides=[s, s], pads=[pads[0], pads[1], pads[2], pads[3]])
    np.testing.assert_array_equal(cpu.max_pool2d(x, k, s, pads), ort_op("MaxPool", {"x": x}, **attrs))
    np.testing.assert_allclose(cpu.avg_pool2d(x, k, s, pads),
                               ort_op("AveragePool", {"x": x}, **attrs), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(cpu.avg_pool2d(x, k, s, pads, count_include_pad=True),
                               ort_op("AveragePool", {"x": x}, count_include_pad=1, **attrs),
                               rtol=1e-5, atol=1e-6)


def test_global_pools_and_int8_max_pool():
    x = _x(2, 5, 7, 7)
    np.testing.assert_allclose(cpu.global_avg_pool(x), x.mean((2, 3), keepdims=True), rtol=1e-5)
    np.testing.assert_array_equal(cpu.global_max_pool(x), x.max((2, 3), keepdims=True))
    q = RNG.integers(-128, 128, (1, 3, 9, 9)).astype("int8")
    np.testing.assert_array_equal(cpu.global_max_pool(q), q.max((2, 3), keepdims=True))
    pooled = cpu.max_pool2d(q, 3, 2, 1)
    ref = np.pad(q, ((0, 0), (0, 0), (1, 1), (1, 1)), constant_values=-128)
    ref = np.lib.stride_tricks.sliding_window_view(ref, (3, 3), axis=(2, 3))[:, :, ::2, ::2]
    np.testing.assert_array_equal(pooled, ref.max((4, 5)))
    with pytest.raises(ShapeError, match="must be float"):
        cpu.global_avg_pool(q)


@pytest.mark.parametrize("a_shape,b_shape", [((2, 3, 5, 7), (3, 1, 7)), ((4, 9), (9,)),
                                             ((6, 1), (1, 5))])
def test_broadcast_binary_ops(a_shape, b_shape):
    a, b = _x(*a_shape), _x(*b_shape)
    for op, ref in (("add", np.add), ("sub", np.subtract), ("mul", np.multiply),
                    ("max", np.maximum), ("min", np.minimum)):
        np.testing.assert_array_equal(cpu.binary(op, a, b), ref(a, b))
    np.testing.assert_allclose(cpu.div(a, np.abs(b) + 1), a / (np.abs(b) + 1), rtol=1e-6)
    with pytest.raises(ShapeError, match="must broadcast"):
        cpu.add(_x(3, 4), _x(5))


def test_unary_ops_and_clip():
    x = _x(3, 50, scale=3)
    np.testing.assert_array_equal(cpu.relu(x), np.maximum(x, 0))
    np.testing.assert_allclose(cpu.sigmoid(x), 1 / (1 + np.exp(-x)), rtol=1e-5)
    np.testing.assert_allclose(cpu.exp(x), np.exp(x), rtol=1e-6)
    np.testing.assert_allclose(cpu.unary("tanh", x), np.tanh(x), atol=1e-6)
    np.testing.assert_allclose(cpu.unary("sqrt", np.abs(x)), np.sqrt(np.abs(x)), rtol=1e-6)
    np.testing.assert_array_equal(cpu.clip(x, -1, 0.5), np.clip(x, -1, 0.5))
    q = RNG.integers(-128, 128, (4, 33)).astype("int8")
    np.testing.assert_array_equal(cpu.relu(q), np.maximum(q, 0))
    np.testing.assert_array_equal(cpu.clip(q, -5, 9), np.clip(q, -5, 9))
    np.testing.assert_array_equal(cpu.add(q, q), q + q)       # int8 wraps like numpy


@pytest.mark.parametrize("shape,axis", [((4, 1000), -1), ((3, 7, 5), 1), ((2, 17), 0)])
def test_softmax_matches_onnxruntime(shape, axis):
    x = _x(*shape, scale=5)
    want = ort_op("Softmax", {"x": x}, axis=axis)
    np.testing.assert_allclose(cpu.softmax(x, axis), want, rtol=1e-5, atol=1e-7)


def test_batch_norm_matches_onnxruntime():
    x = _x(2, 3, 4, 5)
    g, b, m = _x(3), _x(3), _x(3)
    v = np.abs(_x(3)) + 0.1
    want = ort_op("BatchNormalization", {"x": x}, {"g": g, "b": b, "m": m, "v": v},
                  epsilon=1e-5)
    np.testing.assert_allclose(cpu.batch_norm(x, g, b, m, v), want, rtol=1e-5, atol=1e-6)


def test_layout_transforms():
    x = _x(2, 16, 5, 3)
    np.testing.assert_array_equal(cpu.transpose(x, (0, 2, 3, 1)), x.transpose(0, 2, 3, 1))
    np.testing.assert_array_equal(cpu.reshape(x, (4, -1)), x.reshape(4, -1))
    pads = ((0, 0), (1, 2), (0, 1), (3, 0))
    np.testing.assert_array_equal(cpu.pad(x, pads, 1.5), np.pad(x, pads, constant_values=1.5))
    y = _x(2, 3, 5, 3)
    np.testing.assert_array_equal(cpu.concat([x, y, x], axis=1), np.concatenate([x, y, x], 1))
    packed = cpu.pack_nchwc(x, 8)
    np.testing.assert_array_equal(packed, x.reshape(2, 2, 8, 5, 3).transpose(0, 1, 3, 4, 2))
    np.testing.assert_array_equal(cpu.unpack_nchwc(packed), x)
    with pytest.raises(ShapeError, match="multiple of the block"):
        cpu.pack_nchwc(x, 5)


def test_quantize_dequantize_match_onnxruntime():
    from onnx import TensorProto
    x = _x(2, 3, 4, 6, scale=20)
    x.flat[:3] = [0.25, 0.75, -2.5]                           # ties round to even
    scale, zp = np.array(0.5, "float32"), np.array(3, "int8")
    want = ort_op("QuantizeLinear", {"x": x}, {"s": scale, "z": zp}, out_type=TensorProto.INT8)
    q = cpu.quantize(x, 0.5, 3)
    np.testing.assert_array_equal(q, want)
    back = ort_op("DequantizeLinear", {"x": q}, {"s": scale, "z": zp})
    np.testing.assert_allclose(cpu.dequantize(q, 0.5, 3), back, rtol=1e-6)
    s = np.array([0.1, 0.2, 0.3], "float32")
    z = np.array([1, -2, 0], "int32")
    qc = cpu.quantize(x, s, z, axis=1)
    ref = np.clip(np.round(x / s[:, None, None]) + z[:, None, None], -128, 127).astype("int8")
    np.testing.assert_array_equal(qc, ref)


def test_requantize_int32_to_int8():
    acc = RNG.integers(-6000, 6000, (2, 3, 5, 4)).astype("int32")
    got = cpu.requantize(acc, 0.02, 0, 0.5, 1)
    ref = np.clip(np.round(acc.astype("float32") * np.float32(0.04)) + 1, -128, 127)
    np.testing.assert_array_equal(got, ref.astype("int8"))
    bias = np.array([10, -20, 30], "int32")
    got = cpu.requantize_shift(acc, 5, bias, relu=True)
    ref = np.clip((acc + bias[:, None, None] + 16) >> 5, 0, 127).astype("int8")
    np.testing.assert_array_equal(got, ref)


@pytest.mark.parametrize("shape", [(64, 1000), (3, 1), (5, 7), (2, 16), (4, 33), (1, 1000),
                                   (7, 129), (2, 4096)])
def test_softmax_rows_match_numpy(shape):
    x = _x(*shape, scale=6)
    x64 = x.astype(np.float64)
    e = np.exp(x64 - x64.max(-1, keepdims=True))
    np.testing.assert_allclose(cpu.softmax(x), e / e.sum(-1, keepdims=True), rtol=2e-6,
                               atol=1e-9)


def test_softmax_masked_entries_are_zero_and_rows_sum_to_one():
    x = _x(9, 77, scale=30)
    x[:, ::3] = -np.inf
    y = cpu.softmax(x)
    assert (y[:, ::3] == 0).all()
    np.testing.assert_allclose(y.sum(-1), 1, rtol=1e-5)
    assert (cpu.softmax(np.full((2, 50), 7.0, "float32")) == np.float32(1 / 50)).all()


@pytest.mark.parametrize("shape,k,s,pads,separable", [
    ((1, 64, 112, 112), 3, 2, (1, 1, 1, 1), True),     # ResNet's stem pool
    ((2, 3, 9, 40), 3, 3, (2, 2, 2, 2), True),
    ((1, 2, 8, 9), 2, 1, (1, 1, 1, 1), True),
    ((1, 2, 5, 5), 2, 2, (0, 2, 0, 2), False),          # a window wholly in the padding
    ((1, 1, 11, 40), 2, 5, (0, 0, 0, 0), False)])       # column stride past MAX_STRIDE
def test_max_pool_separable_and_te_paths(shape, k, s, pads, separable):
    from vtalab.compiler.cpu.maxpool import separable as is_separable
    x = _x(*shape)
    assert is_separable("max", shape, (k, k), (s, s), pads, (1, 1)) == separable
    np.testing.assert_array_equal(cpu.max_pool2d(x, k, s, pads),
                                  maxpool_ref(x, (k, k), (s, s), pads))
