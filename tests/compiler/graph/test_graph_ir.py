"""Graph IR: types, immutability, shape inference, verifier."""
import numpy as np
import pytest

from vtalab.compiler.graph import GraphBuilder, GraphError, TensorType, verify
from vtalab.compiler.graph.ir import Node
from vtalab.spec.errors import VtaError


def small_graph():
    b = GraphBuilder("g")
    x = b.add_input("x", (1, 4, 8, 8))
    w = b.add_const("w", np.ones((6, 2, 3, 3), np.float32))
    y = b.op("conv2d", x, w, strides=(2, 2), pads=(1, 1, 1, 1), groups=2)
    b.set_outputs([b.op("relu", y)])
    return b.build()


def test_shape_inference_of_grouped_strided_conv():
    g = small_graph()
    assert g.types[g.outputs[0]] == TensorType((1, 6, 4, 4), "float32")
    assert str(g.types[g.outputs[0]]) == "float32[1x6x4x4]"


def test_graph_is_immutable():
    g = small_graph()
    with pytest.raises(Exception):
        g.nodes = ()
    with pytest.raises(TypeError):
        g.types["x"] = TensorType((1,), "float32")
    with pytest.raises(ValueError):
        g.constants["w"][0, 0, 0, 0] = 5.0


def test_verifier_accepts_built_graph_and_rejects_broken_ones():
    g = verify(small_graph())
    bad_order = g.replace(nodes=tuple(reversed(g.nodes)))
    with pytest.raises(GraphError, match="must be defined before use"):
        verify(bad_order)
    conv = g.nodes[0]
    wrong = g.replace(types={**g.types, conv.outputs[0]: TensorType((1, 6, 5, 5), "float32")})
    with pytest.raises(GraphError, match="must be float32\\[1x6x4x4\\]"):
        verify(wrong)
    unknown = g.replace(nodes=(Node("n", "frobnicate", ("x",), ("y",)),))
    with pytest.raises(GraphError, match="frobnicate"):
        verify(unknown)


def test_errors_derive_from_vta_error():
    b = GraphBuilder()
    x = b.add_input("x", (1, 3, 8, 8))
    w = b.add_const("w", np.ones((4, 2, 3, 3), np.float32))
    with pytest.raises(VtaError, match="channels of conv2d node .* must be"):
        b.op("conv2d", x, w)
    with pytest.raises(GraphError, match="dtype must be one of"):
        TensorType((1,), "complex64")


def test_pool_shapes_with_ceil_mode():
    b = GraphBuilder()
    x = b.add_input("x", (1, 2, 7, 7))
    floor = b.op("max_pool", x, kernel=(2, 2), strides=(2, 2))
    ceil = b.op("max_pool", x, kernel=(2, 2), strides=(2, 2), ceil_mode=1)
    assert b.types[floor].shape == (1, 2, 3, 3)
    assert b.types[ceil].shape == (1, 2, 4, 4)


