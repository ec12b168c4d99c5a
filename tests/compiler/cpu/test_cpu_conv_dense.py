"""conv2d (NCHW, NCHWc), dense and matmul on random shapes vs numpy and onnxruntime."""
import numpy as np
import pytest

from vtalab.compiler import cpu
from vtalab.compiler.errors import ShapeError

from .reference import conv2d_ref, ort_op

CONV_CASES = [
    # N, C, H, W, OC, K, stride, pads (t, l, b, r), dilation, groups
    (1, 3, 17, 19, 8, 3, 1, (1, 1, 1, 1), 1, 1),
    (2, 4, 11, 13, 6, 3, 2, (1, 0, 2, 1), 1, 2),
    (1, 8, 12, 12, 8, 3, 1, (2, 2, 2, 2), 2, 8),          # depthwise, dilated
    (1, 5, 9, 10, 10, 5, 3, (2, 2, 2, 2), 1, 5),
    (1, 3, 30, 30, 16, 7, 2, (3, 3, 3, 3), 1, 1),         # ResNet stem, small
]


@pytest.mark.parametrize("case", CONV_CASES)
def test_conv2d_float_matches_numpy(case):
    N, C, H, W, OC, K, s, pads, d, g = case
    rng = np.random.default_rng(abs(hash(case)) % 2**32)
    x = rng.standard_normal((N, C, H, W)).astype("float32")
    w = rng.standard_normal((OC, C // g, K, K)).astype("float32")
    b = rng.standard_normal(OC).astype("float32")
    got = cpu.conv2d(x, w, b, stride=s, padding=pads, dilation=d, groups=g)
    want = conv2d_ref(x, w, (s, s), pads, (d, d), g, b)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("case", CONV_CASES[:3])
def test_conv2d_int8_is_exact(case):
    N, C, H, W, OC, K, s, pads, d, g = case
    rng = np.random.default_rng(7)
    x = rng.integers(-128, 128, (N, C, H, W)).astype("int8")
    w = rng.integers(-128, 128, (OC, C // g, K, K)).astype("int8")
    got = cpu.conv2d(x, w, stride=s, padding=pads, dilation=d, groups=g)
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got, conv2d_ref(x, w, (s, s), pads, (d, d), g))


def test_conv2d_relu_matches_onnxruntime():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((1, 4, 15, 14)).astype("float32")
    w = rng.standard_normal((8, 4, 3, 3)).astype("float32")
    b = rng.standard_normal(8).astype("float32")
    want = ort_op("Conv", {"x": x}, {"w": w, "b": b}, strides=[2, 1], pads=[1, 0, 1, 2])
    got = cpu.conv2d(x, w, b, stride=(2, 1), padding=(1, 0, 1, 2), relu=True)
    np.testing.assert_allclose(got, np.maximum(want, 0), rtol=1e-4, atol=1e-4)


def test_conv2d_nchwc_matches_nchw():
    rng = np.random.default_rng(4)
    x = rng.standard_normal((1, 16, 10, 9)).astype("float32")
    w = rng.standard_normal((32, 16, 3, 3)).astype("float32")
    b = rng.standard_normal(32).astype("float32")
    xc = cpu.pack_nchwc(x, 8)
    wc = cpu.pack_conv_weight(w, 8, 16)
    got = cpu.unpack_nchwc(cpu.conv2d_nchwc(xc, wc, b, stride=2, padding=1, relu=True))
    want = np.maximum(conv2d_ref(x, w, (2, 2), (1, 1, 1, 1), (1, 1), 1, b), 0)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def test_conv2d_rejects_bad_groups():
    x = np.zeros((1, 4, 5, 5), "float32")
    with pytest.raises(ShapeError, match="weight shape must be"):
        cpu.conv2d(x, np.zeros((6, 3, 3, 3), "float32"), groups=2)


@pytest.mark.parametrize("M,K,N", [(1, 512, 1000), (7, 33, 20), (12, 64, 48)])
def test_dense_matches_numpy(M, K, N):
    rng = np.random.default_rng(M * K + N)
    x = rng.standard_normal((M, K)).astype("float32")
    w = rng.standard_normal((N, K)).astype("float32")
    b = rng.standard_normal(N).astype("float32")
    packed = cpu.pack_dense_weight(w)
    got = cpu.dense(x, w, b, relu=True, packed=packed)
    np.testing.assert_allclose(got, np.maximum(x @ w.T + b, 0), rtol=1e-4, atol=1e-4)


def test_dense_int8_and_onnx_gemm():
    rng = np.random.default_rng(5)
    x = rng.integers(-128, 128, (3, 40)).astype("int8")
    w = rng.integers(-128, 128, (24, 40)).astype("int8")
    np.testing.assert_array_equal(cpu.dense(x, w), x.astype(np.int32) @ w.T.astype(np.int32))
    xf, wf = x.astype("float32"), w.astype("float32")
    want = ort_op("Gemm", {"x": xf}, {"w": wf}, transB=1)
    np.testing.assert_allclose(cpu.dense(xf, wf), want, rtol=1e-5)


def test_matmul_matches_numpy():
    rng = np.random.default_rng(6)
    a = rng.standard_normal((9, 17)).astype("float32")
    b = rng.standard_normal((17, 35)).astype("float32")
    np.testing.assert_allclose(cpu.matmul(a, b), a @ b, rtol=1e-4, atol=1e-4)
    with pytest.raises(ShapeError, match="inner dimensions must match"):
        cpu.matmul(a, a)
