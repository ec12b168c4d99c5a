"""ONNX import: each covered op against onnxruntime, and the bad-input errors."""
import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from vtalab.compiler.graph import ModelError, UnsupportedOpError, load_onnx, run  # noqa: E402
from vtalab.spec.errors import VtaError  # noqa: E402

from .conftest import ort_run, rand  # noqa: E402


def model_of(nodes, inputs, output_shape, inits=(), opset=17):
    ins = [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in inputs]
    out = helper.make_tensor_value_info(nodes[-1].output[0], TensorProto.FLOAT, output_shape)
    graph = helper.make_graph(nodes, "t", ins, [out],
                              [numpy_helper.from_array(a, n) for n, a in inits])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    return model


def check(model, feeds, atol=1e-5):
    graph = load_onnx(model)
    got = run(graph, feeds)[graph.outputs[0]]
    want = ort_run(model, feeds)
    assert got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_allclose(got, want, atol=atol, rtol=1e-5)
    return graph


CONVS = [
    dict(kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
    dict(kernel_shape=[3, 3], strides=[2, 2], pads=[0, 1, 2, 1]),
    dict(kernel_shape=[3, 3], dilations=[2, 2], pads=[2, 2, 2, 2]),
    dict(kernel_shape=[3, 3], group=2),
    dict(kernel_shape=[3, 3], group=8, pads=[1, 1, 1, 1]),        # depthwise
    dict(kernel_shape=[2, 2], strides=[2, 2], auto_pad="SAME_UPPER"),
    dict(kernel_shape=[3, 1], auto_pad="SAME_LOWER"),
]


@pytest.mark.parametrize("attrs", CONVS)
@pytest.mark.parametrize("opset", [13, 20])
def test_conv(attrs, opset):
    group = attrs.get("group", 1)
    kh, kw = attrs["kernel_shape"]
    w = rand((8, 8 // group, kh, kw), 1)
    b = rand((8,), 2)
    node = helper.make_node("Conv", ["x", "w", "b"], ["y"], **attrs)
    check(model_of([node], [("x", (1, 8, 9, 9))], None, [("w", w), ("b", b)], opset),
          rand((1, 8, 9, 9)))


@pytest.mark.parametrize("attrs,a_shape,b_shape,c_shape", [
    (dict(transB=1), (2, 5), (4, 5), (4,)),
    (dict(transA=1, alpha=0.5, beta=2.0), (5, 2), (5, 4), (2, 4)),
    (dict(), (2, 5), (5, 4), (1, 4)),
])
def test_gemm(attrs, a_shape, b_shape, c_shape):
    node = helper.make_node("Gemm", ["a", "b", "c"], ["y"], **attrs)
    model = model_of([node], [("a", a_shape)], None, [("b", rand(b_shape, 1)),
                                                      ("c", rand(c_shape, 2))])
    check(model, rand(a_shape))


def test_matmul_computed_and_constant():
    n1 = helper.make_node("MatMul", ["x", "w"], ["h"])
    n2 = helper.make_node("MatMul", ["h", "x2"], ["y"])
    model = model_of([n1, n2], [("x", (3, 4)), ("x2", (6, 2))], None, [("w", rand((4, 6), 1))])
    graph = check(model, {"x": rand((3, 4)), "x2": rand((6, 2), 3)})
    assert [n.op for n in graph.nodes] == ["dense", "matmul"]


def test_elementwise_broadcast_and_activations():
    nodes = [helper.make_node("Add", ["x", "c1"], ["a"]),
             helper.make_node("Mul", ["a", "c2"], ["m"]),
             helper.make_node("Sub", ["m", "x"], ["s"]),
             helper.make_node("Relu", ["s"], ["r"]),
             helper.make_node("Clip", ["r", "lo", "hi"], ["y"])]
    inits = [("c1", rand((1, 3, 1, 1), 1)), ("c2", rand((5,), 2)),
             ("lo", np.array(0.1, np.float32)), ("hi", np.array(1.5, np.float32))]
    check(model_of(nodes, [("x", (2, 3, 4, 5))], None, inits), rand((2, 3, 4, 5)))


def test_batch_norm_pools_and_shape_ops():
    c = 4
    bn = [("s", rand((c,), 1)), ("bb", rand((c,), 2)), ("mu", rand((c,), 3)),
          ("var", np.abs(rand((c,), 4)) + 0.5), ("shape", np.array([0, -1], np.int64)),
          ("pads", np.array([0, 0, 1, 0, 0, 0, 1, 2], np.int64))]
    nodes = [helper.make_node("BatchNormalization", ["x", "s", "bb", "mu", "var"], ["n"]),
             helper.make_node("MaxPool", ["n"], ["p1"], kernel_shape=[3, 3], strides=[2, 2],
                              pads=[1, 1, 1, 1], ceil_mode=1),
             helper.make_node("AveragePool", ["n"], ["p2"], kernel_shape=[3, 3],
                              strides=[2, 2], pads=[1, 1, 1, 1], count_include_pad=0),
             helper.make_node("Concat", ["p1", "p2"], ["cat"], axis=1),
             helper.make_node("Pad", ["cat", "pads"], ["pd"], mode="constant"),
             helper.make_node("Transpose", ["pd"], ["t"], perm=[0, 2, 3, 1]),
             helper.make_node("GlobalAveragePool", ["t"], ["g"]),
             helper.make_node("Flatten", ["g"], ["f"], axis=1),
             helper.make_node("Reshape", ["f", "shape"], ["rs"]),
             helper.make_node("Softmax", ["rs"], ["y"], axis=-1)]
    check(model_of(nodes, [("x", (2, c, 9, 9))], None, bn), rand((2, c, 9, 9)))


def test_quantize_dequantize_linear_per_axis():
    scale = np.array([0.02, 0.05, 0.1], np.float32)
    zp = np.array([0, 5, -3], np.int8)
    nodes = [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q"], axis=1),
             helper.make_node("DequantizeLinear", ["q", "s", "z"], ["y"], axis=1)]
    check(model_of(nodes, [("x", (1, 3, 4, 4))], None, [("s", scale), ("z", zp)]),
          rand((1, 3, 4, 4)) * 3, atol=0)


# ---- bad inputs ---------------------------------------------------------------------------
def test_corrupt_and_truncated_files(tmp_path, mlp_model):
    data = mlp_model.SerializeToString()
    cuts = [("truncated%d.onnx" % i, data[:cut])
            for i, cut in enumerate((1, 40, len(data) // 3, len(data) // 2, len(data) - 3))]
    for name, blob in [("garbage.onnx", b"\x00\xffnot a model at all" * 7),
                       ("empty.onnx", b"")] + cuts:
        path = tmp_path / name
        path.write_bytes(blob)
        with pytest.raises(ModelError, match=r"ONNX file .* must") as info:
            load_onnx(path)
        assert isinstance(info.value, VtaError)
    with pytest.raises(ModelError, match="existing file"):
        load_onnx(tmp_path / "missing.onnx")


def test_dynamic_dimension_names_the_input():
    node = helper.make_node("Relu", ["images"], ["y"])
    model = model_of([node], [("images", ("batch", 3, 8, 8))], None)
    with pytest.raises(ModelError, match="dimension 0 of input 'images' must be a static "
                                         "size, not dynamic 'batch'"):
        load_onnx(model)
    graph = load_onnx(model, input_shapes={"images": (2, 3, 8, 8)})
    assert graph.types["images"].shape == (2, 3, 8, 8)


def test_unsupported_op_names_node_and_type():
    node = helper.make_node("Hardmax", ["x"], ["y"], name="act7")
    with pytest.raises(UnsupportedOpError, match="node 'act7' .* not 'Hardmax'"):
        load_onnx(model_of([node], [("x", (1, 4))], None))


def test_unsupported_attribute_and_opset():
    node = helper.make_node("Pad", ["x", "p"], ["y"], mode="wrap", name="pad0")
    with pytest.raises(UnsupportedOpError, match=r"mode of Pad node 'pad0' \(opset 17\) must "
                                                 r"be one of .*, not 'wrap'"):
        load_onnx(model_of([node], [("x", (1, 4))], None, [("p", np.array([0, 1, 0, 1]))]))
    relu = helper.make_node("Relu", ["x"], ["y"])
    newest = onnx.defs.onnx_opset_version()
    with pytest.raises(ModelError, match=f"opset must be 13..{newest}, not 12"):
        load_onnx(model_of([relu], [("x", (1, 4))], None, opset=12))


def test_pad_with_axes_input_opset18():
    nodes = [helper.make_node("Pad", ["x", "p", "v", "axes"], ["y"], mode="constant")]
    inits = [("p", np.array([1, 2, 0, 3], np.int64)), ("v", np.array(0.5, np.float32)),
             ("axes", np.array([1, 3], np.int64))]
    check(model_of(nodes, [("x", (1, 2, 3, 4))], None, inits, opset=18), rand((1, 2, 3, 4)))
