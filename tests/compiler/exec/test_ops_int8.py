"""The operators of the op table beyond ResNets, through the whole compiler: a small
vision model (HardSwish, SiLU, Resize, ConvTranspose, InstanceNormalization) and a small
transformer block (LayerNormalization, attention with computed MatMuls, Softmax, Gelu, the
Shape -> Gather -> Concat -> Reshape head split that exporters emit). Float path against
onnxruntime; int8 path on the functional simulator bit-exact against the int8 reference,
close to the float model."""
import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from vtalab.compiler.exec import compile_model  # noqa: E402
from vtalab.compiler.graph import load_onnx, run, run_int8  # noqa: E402

from .conftest import values_differ, samples  # noqa: E402


def _rand(shape, seed, scale=0.3):
    return (np.random.default_rng(seed).normal(0, 1, shape) * scale).astype(np.float32)


def _model(nodes, x_shape, y_shape, inits, opset=17):
    graph = helper.make_graph(
        nodes, "m", [helper.make_tensor_value_info("x", TensorProto.FLOAT, x_shape)],
        [helper.make_tensor_value_info(nodes[-1].output[0], TensorProto.FLOAT, y_shape)],
        [numpy_helper.from_array(np.asarray(a), n) for n, a in inits])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    return model


def vision_model():
    n = helper.make_node
    nodes = [n("Conv", ["x", "w1", "b1"], ["c1"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
             n("HardSwish", ["c1"], ["h1"]),
             n("Conv", ["h1", "w2"], ["c2"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
             n("Sigmoid", ["c2"], ["s2"]), n("Mul", ["c2", "s2"], ["silu"]),
             n("Resize", ["silu", "", "scales"], ["up"], mode="nearest"),
             n("ConvTranspose", ["up", "wt"], ["ct"], strides=[2, 2], kernel_shape=[2, 2]),
             n("InstanceNormalization", ["ct", "g", "beta"], ["in"]),
             n("LeakyRelu", ["in"], ["lr"], alpha=0.1),
             n("GlobalAveragePool", ["lr"], ["gap"]), n("Flatten", ["gap"], ["f"]),
             n("Gemm", ["f", "wf", "bf"], ["y"], transB=1)]
    inits = [("w1", _rand((8, 3, 3, 3), 1)), ("b1", _rand((8,), 2)),
             ("w2", _rand((8, 8, 3, 3), 3)), ("scales", np.array([1, 1, 2, 2], np.float32)),
             ("wt", _rand((8, 4, 2, 2), 4)), ("g", _rand((4,), 5) + 1), ("beta", _rand((4,), 6)),
             ("wf", _rand((10, 4), 7)), ("bf", _rand((10,), 8))]
    return _model(nodes, (1, 3, 8, 8), (1, 10), inits)


def transformer_model(seq=8, dim=16, heads=2):
    n = helper.make_node
    hd = dim // heads
    nodes = [n("LayerNormalization", ["x", "ln_g", "ln_b"], ["ln"], axis=-1),
             n("MatMul", ["ln", "wq"], ["q"]), n("MatMul", ["ln", "wk"], ["k"]),
             n("MatMul", ["ln", "wv"], ["v"]),
             n("Shape", ["q"], ["shape"]), n("Gather", ["shape", "i0"], ["batch"], axis=0),
             n("Concat", ["batch", "rest"], ["heads_shape"], axis=0)]
    for t in "qkv":
        nodes += [n("Reshape", [t, "heads_shape"], [f"{t}4"]),
                  n("Transpose", [f"{t}4"], [f"{t}h"], perm=[0, 2, 1, 3])]
    nodes += [n("Transpose", ["kh"], ["kt"], perm=[0, 1, 3, 2]),
              n("MatMul", ["qh", "kt"], ["scores"]), n("Div", ["scores", "scale"], ["sc"]),
              n("Softmax", ["sc"], ["p"], axis=-1), n("MatMul", ["p", "vh"], ["o4"]),
              n("Transpose", ["o4"], ["o3"], perm=[0, 2, 1, 3]),
              n("Reshape", ["o3", "flat_shape"], ["o"]), n("Add", ["x", "o"], ["r1"]),
              n("LayerNormalization", ["r1", "ln2_g", "ln2_b"], ["ln2"], axis=-1),
              n("MatMul", ["ln2", "w1"], ["m1"]), n("Gelu", ["m1"], ["g1"]),
              n("MatMul", ["g1", "w2"], ["m2"]), n("Add", ["r1", "m2"], ["y"])]
    inits = [("ln_g", _rand((dim,), 1) + 1), ("ln_b", _rand((dim,), 2)),
             ("wq", _rand((dim, dim), 3)), ("wk", _rand((dim, dim), 4)),
             ("wv", _rand((dim, dim), 5)), ("i0", np.array([0], np.int64)),
             ("rest", np.array([seq, heads, hd], np.int64)),
             ("scale", np.array(np.sqrt(hd), np.float32)),
             ("flat_shape", np.array([1, seq, dim], np.int64)),
             ("ln2_g", _rand((dim,), 6) + 1), ("ln2_b", _rand((dim,), 7)),
             ("w1", _rand((dim, 2 * dim), 8)), ("w2", _rand((2 * dim, dim), 9))]
    return _model(nodes, (1, seq, dim), (1, seq, dim), inits, opset=20)


MODELS = {"vision": (vision_model, (1, 3, 8, 8)), "transformer": (transformer_model, (1, 8, 16))}


def test_shape_subgraph_folds_to_constants():
    graph = load_onnx(transformer_model())
    assert not {"gather", "concat"} & {n.op for n in graph.nodes}
    heads = [n for n in graph.nodes if n.op == "reshape" and n.attr("shape") == (1, 8, 2, 8)]
    assert len(heads) == 3                                    # q, k, v split into heads


@pytest.mark.parametrize("name", sorted(MODELS))
def test_float_path_matches_onnxruntime(name):
    ort = pytest.importorskip("onnxruntime")
    make, shape = MODELS[name]
    model = make()
    module = compile_model(model, "default", quantize=False)
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    x = samples(shape, 1, 11)[0]
    got = module.run(x)[0][module.outputs[0]]
    want = session.run(None, {"x": x})[0]
    assert np.abs(got - want).max() <= 1e-4 * max(1.0, float(np.abs(want).max()))


@pytest.mark.parametrize("name", sorted(MODELS))
def test_int8_path_bit_exact_and_close(name):
    make, shape = MODELS[name]
    model = make()
    module = compile_model(model, "default", calibration=samples(shape, 8, 3))
    assert any(s.target == "accel" for s in module.steps)
    x = samples(shape, 1, 12)[0]
    outputs, _ = module.run(x, keep=True)
    reference = run_int8(module.graph, x, keep_all=True)
    assert values_differ(outputs, reference) == []
    out = module.outputs[0]
    assert np.array_equal(outputs[out], reference[out])
    want = run(load_onnx(model), x)
    want = want[next(iter(want))]
    cosine = float(np.dot(outputs[out].ravel(), want.ravel()) /
                   (np.linalg.norm(outputs[out]) * np.linalg.norm(want)))
    assert cosine >= 0.99, cosine
