"""The op table: one definition per operator, one registry, version-checked converters."""
import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper  # noqa: E402

from vtalab.compiler.graph import GraphBuilder, GraphError, load_onnx, run  # noqa: E402
from vtalab.compiler.graph.errors import UnsupportedOpError  # noqa: E402
from vtalab.compiler.graph.opdef import (QUANT_RULES, REGISTRY, OpDef, known_ops,  # noqa: E402
                                         onnx_ops, opdef, register)
from vtalab.compiler.graph.shapes import same_type  # noqa: E402


def test_every_op_has_inference_and_a_kernel_every_converter_versions():
    for name in known_ops():
        d = opdef(name)
        assert d.quant in QUANT_RULES and callable(d.infer)
        assert d.reference or d.cpu or d.int8, f"{name} has no kernel at all"
    for op_type in onnx_ops():
        versions = REGISTRY.onnx[op_type].versions
        assert versions and all(v <= onnx.defs.onnx_opset_version() for v in versions)


def test_converters_cover_every_schema_version_of_opsets_13_and_newer():
    """A version bump of the installed onnx (a new schema version of a converted op) must be
    reviewed: it is refused until its converter lists it."""
    newest = onnx.defs.onnx_opset_version()
    for op_type in onnx_ops():
        for opset in range(13, newest + 1):
            try:
                version = onnx.defs.get_schema(op_type, opset, "").since_version
            except onnx.defs.SchemaError:   # the op does not exist yet at this opset
                continue
            if version not in REGISTRY.onnx[op_type].versions:
                pytest.fail(f"{op_type} at opset {opset} (version {version}) is not reviewed")


def test_a_new_operator_is_one_definition():
    name = "test_softsign_twice"
    register(OpDef(name, same_type, reference=lambda n, x: 2 * x / (1 + np.abs(x)),
                   elementwise=True))
    try:
        b = GraphBuilder()
        x = b.add_input("x", (2, 3))
        b.set_outputs([b.op(name, x)])
        graph = b.build()
        value = np.linspace(-2, 2, 6, dtype=np.float32).reshape(2, 3)
        got = run(graph, value)[graph.outputs[0]]
        np.testing.assert_allclose(got, 2 * value / (1 + np.abs(value)))
        with pytest.raises(GraphError, match="registered once"):
            register(OpDef(name, same_type))
    finally:
        del REGISTRY.ops[name]


def _model(node, opset, inputs=(("x", (2, 3)),), out_shape=(2, 3)):
    graph = helper.make_graph(
        [node], "t", [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in inputs],
        [helper.make_tensor_value_info(node.output[0], TensorProto.FLOAT, out_shape)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    return model


def test_an_unreviewed_schema_version_is_refused_with_op_opset_and_version(monkeypatch):
    converter = REGISTRY.onnx["Relu"]
    monkeypatch.setitem(REGISTRY.onnx, "Relu", type(converter)(
        "Relu", converter.convert, (13,), ()))
    node = helper.make_node("Relu", ["x"], ["y"], name="r")
    load_onnx(_model(node, 13))
    with pytest.raises(UnsupportedOpError, match=r"version of Relu node 'r' \(opset 14\) must "
                                                 r"be one of .* \[13\], not 14"):
        load_onnx(_model(node, 14))


def test_attributes_that_became_inputs_follow_the_opset():
    """ReduceMean: axes an attribute before opset 18, an input from 18 on."""
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    old = helper.make_node("ReduceMean", ["x"], ["y"], axes=[1], keepdims=0)
    new = helper.make_node("ReduceMean", ["x", "axes"], ["y"], keepdims=0)
    for node, opset in ((old, 17), (new, 18)):
        model = _model(node, opset, inputs=(("x", (2, 3, 4)),), out_shape=(2, 4))
        if opset == 18:
            model.graph.initializer.append(onnx.numpy_helper.from_array(
                np.array([1], np.int64), "axes"))
        graph = load_onnx(model)
        np.testing.assert_allclose(run(graph, x)["y"], x.mean(axis=1))


def test_group_norm_scales_per_group_before_21_and_per_channel_after():
    x = np.random.default_rng(0).normal(size=(1, 4, 3)).astype(np.float32)
    for opset, scale in ((18, np.array([1, 2], np.float32)),
                         (21, np.array([1, 1, 2, 2], np.float32))):
        node = helper.make_node("GroupNormalization", ["x", "s", "b"], ["y"], num_groups=2)
        model = _model(node, opset, inputs=(("x", (1, 4, 3)),), out_shape=(1, 4, 3))
        for name, value in (("s", scale), ("b", np.zeros_like(scale))):
            model.graph.initializer.append(onnx.numpy_helper.from_array(value, name))
        got = run(load_onnx(model), x)["y"]
        groups = x.reshape(1, 2, 6)
        norm = (groups - groups.mean(-1, keepdims=True)) / np.sqrt(
            groups.var(-1, keepdims=True) + 1e-5)
        want = norm.reshape(1, 4, 3) * np.array([1, 1, 2, 2], np.float32).reshape(1, 4, 1)
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


def test_computed_shape_inputs_are_refused_with_the_reason():
    node = helper.make_node("Reshape", ["x", "s"], ["y"], name="rs")
    model = _model(node, 17, inputs=(("x", (2, 3)),), out_shape=(3, 2))
    model.graph.input.append(helper.make_tensor_value_info("s", TensorProto.INT64, (2,)))
    with pytest.raises(UnsupportedOpError, match="shape of Reshape node 'rs' .* must be a "
                                                 "constant"):
        load_onnx(model)
    graph = load_onnx(model, constant_inputs={"s": np.array([3, 2])})
    assert graph.inputs == ("x",) and graph.types["y"].shape == (3, 2)
