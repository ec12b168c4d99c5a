"""Property tests: random shapes, strides, paddings and groups against numpy."""
import numpy as np
from hypothesis import HealthCheck, given, settings, strategies as st

from vtalab.compiler import cpu

from .reference import conv2d_ref, maxpool_ref

SETTINGS = settings(max_examples=12, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])


@st.composite
def conv_cases(draw):
    groups = draw(st.sampled_from([1, 1, 2, 3]))
    icg, ocg = draw(st.integers(1, 3)), draw(st.integers(1, 5))
    k = draw(st.integers(1, 4))
    stride, dilation = draw(st.integers(1, 3)), draw(st.integers(1, 2))
    pads = tuple(draw(st.integers(0, 2)) for _ in range(4))
    span = dilation * (k - 1) + 1
    h = draw(st.integers(max(1, span - pads[0] - pads[2]), 14))
    w = draw(st.integers(max(1, span - pads[1] - pads[3]), 14))
    return (draw(st.integers(1, 2)), icg * groups, h, w, ocg * groups, k, stride, pads,
            dilation, groups, draw(st.sampled_from(["float32", "int8"])))


@SETTINGS
@given(conv_cases(), st.integers(0, 2**31))
def test_random_conv2d(case, seed):
    N, C, H, W, OC, K, s, pads, d, g, dtype = case
    rng = np.random.default_rng(seed)
    x = rng.integers(-9, 9, (N, C, H, W)).astype(dtype)
    w = rng.integers(-9, 9, (OC, C // g, K, K)).astype(dtype)
    got = cpu.conv2d(x, w, stride=s, padding=pads, dilation=d, groups=g)
    np.testing.assert_array_equal(got, conv2d_ref(x, w, (s, s), pads, (d, d), g))


@SETTINGS
@given(st.lists(st.integers(1, 9), min_size=1, max_size=3), st.data())
def test_random_broadcast_add_and_softmax(shape, data):
    rng = np.random.default_rng(len(shape))
    b_shape = [data.draw(st.sampled_from([1, n])) for n in shape][data.draw(st.integers(0, len(shape) - 1)):]
    a = rng.standard_normal(shape).astype("float32")
    b = rng.standard_normal(b_shape).astype("float32")
    np.testing.assert_array_equal(cpu.add(a, b), a + b)
    e = np.exp(a - a.max(-1, keepdims=True))
    np.testing.assert_allclose(cpu.softmax(a), e / e.sum(-1, keepdims=True), rtol=1e-5, atol=1e-7)


@st.composite
def pool_cases(draw):
    k = (draw(st.integers(1, 4)), draw(st.integers(1, 4)))
    s = (draw(st.integers(1, 4)), draw(st.integers(1, 5)))
    pads = tuple(draw(st.integers(0, k[d % 2] - 1)) for d in range(4))
    h = draw(st.integers(max(1, k[0] - pads[0] - pads[2]), 13))
    w = draw(st.integers(max(1, k[1] - pads[1] - pads[3]), 70))
    return (draw(st.integers(1, 2)), draw(st.integers(1, 3)), h, w), k, s, pads, \
        draw(st.sampled_from(["float32", "int8"]))


@SETTINGS
@given(pool_cases(), st.integers(0, 2**31))
def test_random_max_pool(case, seed):
    shape, k, s, pads, dtype = case
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal(shape) * 50).astype(dtype)
    np.testing.assert_array_equal(cpu.max_pool2d(x, k, s, pads), maxpool_ref(x, k, s, pads))
