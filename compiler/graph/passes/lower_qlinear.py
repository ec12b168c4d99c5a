"""QOperator models -> QDQ form: QLinearConv / QLinearMatMul become
`dequantize -> conv2d|dense|matmul (float, constant weights dequantized now) -> quantize`.

After this pass a QOperator model looks like a QDQ one, so `strip_qdq` reads its scales and
the rest of the pipeline re-quantises it for the accelerator (power-of-two scales)."""
from __future__ import annotations

import numpy as np

from ..ir import Graph, Node
from ..kernels import dequantize_linear
from .rewrite import PassContext, Rewriter


def _dequant(rw: Rewriter, value: str, scale, zp, axis: int, name: str) -> str:
    const = rw.constant_value(value)
    if const is not None:
        return rw.const(dequantize_linear(const, scale, zp, axis), f"{name}_f")
    return rw.op("dequantize", rw.value(value), name=name, scale=np.float32(scale),
                 zero_point=zp, axis=axis)


def _requant(rw: Rewriter, node: Node, y: str) -> None:
    rw.emit_node("quantize", [y], dict(scale=node.attr("y_scale"),
                                       zero_point=node.attr("y_zero_point"), axis=1,
                                       dtype=node.attr("y_dtype")), f"{node.name}_q",
                 node.outputs)


def _conv(rw: Rewriter, node: Node) -> None:
    xs, ws = node.attr("x_scale"), np.asarray(node.attr("w_scale"), np.float32)
    x = _dequant(rw, node.inputs[0], xs, node.attr("x_zero_point"), 1, f"{node.name}_x")
    w = _dequant(rw, node.inputs[1], ws, node.attr("w_zero_point"), 0, f"{node.name}_w")
    inputs = [x, w]
    if len(node.inputs) > 2 and node.inputs[2]:
        inputs.append(_dequant(rw, node.inputs[2], np.float32(xs) * ws,
                               np.zeros(ws.shape, np.int32), 0, f"{node.name}_b"))
    attrs = {k: node.attrs[k] for k in ("strides", "pads", "dilations", "groups")}
    _requant(rw, node, rw.op("conv2d", *inputs, name=node.name, **attrs))


def _matmul(rw: Rewriter, node: Node, graph: Graph) -> None:
    a = _dequant(rw, node.inputs[0], node.attr("a_scale"), node.attr("a_zero_point"), 1,
                 f"{node.name}_a")
    b_const = rw.constant_value(node.inputs[1])
    if b_const is not None and b_const.ndim == 2 and graph.types[node.inputs[0]].rank == 2:
        w = dequantize_linear(b_const, node.attr("b_scale"), node.attr("b_zero_point"), 1)
        y = rw.op("dense", a, rw.const(np.ascontiguousarray(w.T), f"{node.name}_w"),
                  name=node.name)
    else:
        b = _dequant(rw, node.inputs[1], node.attr("b_scale"), node.attr("b_zero_point"),
                     graph.types[node.inputs[1]].rank - 1, f"{node.name}_b")
        y = rw.op("matmul", a, b, name=node.name)
    _requant(rw, node, y)


def lower_qlinear(graph: Graph, ctx: PassContext) -> Graph:
    if not any(n.op in ("qlinear_conv", "qlinear_matmul") for n in graph.nodes):
        return graph
    rw = Rewriter(graph)
    for node in graph.nodes:
        if node.op == "qlinear_conv":
            _conv(rw, node)
        elif node.op == "qlinear_matmul":
            _matmul(rw, node, graph)
        else:
            rw.keep(node)
    return rw.finish()
