"""Float ops between int8 steps: the module computes the float reference's values bit for
bit. LLVM kernels the op table marks ``llvm_exact`` equal their reference on random data;
every other LLVM float kernel (polynomial exp, vector sums, reciprocal multiplies) is
replaced by the reference in an int8 graph, and used in a float graph."""
import numpy as np
import pytest

pytest.importorskip("llvmlite", reason="the LLVM CPU kernels need llvmlite")

from vtalab.compiler.exec.cpu_ops import cpu_kernel  # noqa: E402
from vtalab.compiler.graph.ir import Node, type_of_array  # noqa: E402
from vtalab.compiler.graph.opdef import REGISTRY, known_ops, opdef  # noqa: E402

RNG = np.random.default_rng(3)


def _floats(*shape, scale=3.0):
    return (RNG.standard_normal(shape) * scale).astype(np.float32)


def _int8(*shape):
    return RNG.integers(-128, 128, shape).astype(np.int8)


POOL = dict(kernel=(3, 3), strides=(2, 2), pads=(1, 1, 1, 1))
# op: (attrs, inputs) for every op whose LLVM kernel the op table marks exact
EXACT_CASES = {
    "add": ({}, [_floats(4, 33), _floats(33)]),
    "sub": ({}, [_floats(4, 33), _floats(4, 33)]),
    "mul": ({}, [_floats(4, 33), _floats(1, 33)]),
    "div": ({}, [_floats(4, 33), _floats(4, 33) + np.float32(9)]),
    "max": ({}, [_floats(4, 33), _floats(4, 33)]),
    "min": ({}, [_floats(4, 33), _floats(4, 33)]),
    "relu": ({}, [_floats(5, 37)]),
    "clip": (dict(lo=-1.5, hi=2.0), [_floats(5, 37)]),
    "sqrt": ({}, [np.abs(_floats(5, 37))]),
    "neg": ({}, [_floats(5, 37)]),
    "abs": ({}, [_floats(5, 37)]),
    "transpose": (dict(perm=(0, 2, 1)), [_floats(3, 5, 7)]),
    "max_pool": (POOL, [_floats(1, 4, 9, 9)]),
    "quantize": (dict(scale=np.float32(2.0 ** -4), zero_point=np.int8(0), axis=1,
                      dtype="int8"), [_floats(4, 40)]),
    "dequantize": (dict(scale=np.float32(2.0 ** -4), zero_point=np.int8(0), axis=1),
                   [_int8(4, 40)]),
    "qconv2d": (dict(strides=(1, 1), pads=(1, 1, 1, 1), shift=6, lo=-128, hi=127,
                     out_dtype="int8"), [_int8(1, 8, 6, 6), _int8(8, 8, 3, 3)]),
}
INEXACT = ("softmax", "sigmoid", "log", "global_avg_pool", "conv2d", "dense", "batch_norm")


def _node(op, attrs, arity):
    return Node(f"t_{op}", op, tuple(f"x{i}" for i in range(arity)), ("y",), attrs)


def test_every_exact_llvm_kernel_has_a_case():
    flagged = {name for name in known_ops() if REGISTRY.ops[name].llvm_exact}
    assert flagged == set(EXACT_CASES)


@pytest.mark.parametrize("op", sorted(EXACT_CASES))
def test_exact_llvm_kernel_equals_the_reference(op):
    attrs, arrays = EXACT_CASES[op]
    node = _node(op, attrs, len(arrays))
    types = [type_of_array(a) for a in arrays]
    kernel = cpu_kernel(node, types, exact=True)
    assert kernel.impl == "llvm"
    d = opdef(op)
    reference = d.reference or d.int8
    want = np.asarray(reference(node, *arrays))
    got = kernel(*arrays)
    assert got.dtype == want.dtype and np.array_equal(got, want)


@pytest.mark.parametrize("op", INEXACT)
def test_inexact_llvm_kernels_give_way_to_the_reference_in_int8_graphs(op):
    d = opdef(op)
    assert d.llvm is not None and not d.llvm_exact
    attrs = {"softmax": dict(axis=-1), "global_avg_pool": {},
             "batch_norm": dict(epsilon=1e-5)}.get(op, {})
    shapes = {"conv2d": [(1, 4, 6, 6), (4, 4, 3, 3)], "dense": [(2, 8), (4, 8)],
              "batch_norm": [(1, 4, 3, 3)] + [(4,)] * 4,
              "global_avg_pool": [(1, 4, 5, 5)]}.get(op, [(3, 17)])
    arrays = [_floats(*s) for s in shapes]
    node = _node(op, attrs, len(arrays))
    types = [type_of_array(a) for a in arrays]
    assert cpu_kernel(node, types).impl == "llvm"
    exact = cpu_kernel(node, types, exact=True)
    assert exact.impl == "numpy" and exact.fn is d.reference


def test_the_llvm_softmax_differs_from_the_reference_in_the_last_bits():
    """Why the reference runs instead: polynomial exp (a few ulp), vector partial sums and
    a reciprocal multiply; on rows like the ViT's attention scores most values differ."""
    x = _floats(64, 197)
    node = _node("softmax", dict(axis=-1), 1)
    fast = cpu_kernel(node, [type_of_array(x)])(x)
    exact = cpu_kernel(node, [type_of_array(x)], exact=True)(x)
    assert np.array_equal(exact, opdef("softmax").reference(node, x))
    assert not np.array_equal(fast, exact)
    assert np.abs(fast - exact).max() < 1e-6
