"""Float reference interpreter of the graph IR (numpy, ONNX semantics).

`run(graph, feeds)` evaluates every node in order and returns the graph outputs. It covers
the imported float ops, ONNX's QuantizeLinear/DequantizeLinear and QLinearConv/MatMul (as
onnxruntime computes them) and the layout ops. The integer ops of a power-of-two quantised
graph are evaluated by the independent `int8_ref` interpreter instead.
"""
from __future__ import annotations

from typing import Callable, Mapping

import numpy as np

from . import kernels as K
from .errors import GraphError
from .ir import Graph, Node
from .layout import pack_array, unpack_array


def _clip(node, x):
    lo, hi = node.attr("lo"), node.attr("hi")
    return np.clip(x, -np.inf if lo is None else lo, np.inf if hi is None else hi).astype(x.dtype)


def _conv(node, x, w, b=None):
    out = K.conv2d(x, w, node.attr("strides", (1, 1)), node.attr("pads", (0, 0, 0, 0)),
                   node.attr("dilations", (1, 1)), node.attr("groups", 1))
    if b is not None:
        out = out + b.reshape(1, -1, 1, 1)
    return out.astype(np.float32)


def _dense(node, x, w, b=None):
    out = K.dense(x, w)
    return (out if b is None else out + b).astype(np.float32)


def _pool(node, x):
    args = (node.attr("kernel"), node.attr("strides", (1, 1)), node.attr("pads", (0, 0, 0, 0)))
    if node.op == "max_pool":
        return K.max_pool(x, *args, node.attr("dilations", (1, 1)), node.attr("ceil_mode", 0))
    return K.avg_pool(x, *args, node.attr("count_include_pad", 0), node.attr("ceil_mode", 0))


def _pad(node, x):
    rank = x.ndim
    pads = node.attr("pads")
    widths = [(pads[i], pads[i + rank]) for i in range(rank)]
    return np.pad(x, widths, constant_values=np.array(node.attr("value", 0), x.dtype))


def _quantize(node, x):
    return K.quantize_linear(x, node.attr("scale"), node.attr("zero_point"),
                             node.attr("axis", 1), node.attr("dtype", "int8"))


def _dequantize(node, x):
    return K.dequantize_linear(x, node.attr("scale"), node.attr("zero_point"),
                               node.attr("axis", 1))


def _qlinear_conv(node, x, w, b=None):
    xs = x.astype(np.float64) - np.float64(node.attr("x_zero_point"))
    wz = K.channel_shape(np.asarray(node.attr("w_zero_point")), 4, 0)
    ws = w.astype(np.float64) - wz
    acc = K.conv2d(xs, ws, node.attr("strides"), node.attr("pads"), node.attr("dilations"),
                   node.attr("groups"))
    if b is not None:
        acc = acc + b.reshape(1, -1, 1, 1)
    mult = (np.float32(node.attr("x_scale")) * np.asarray(node.attr("w_scale"), np.float32)
            / np.float32(node.attr("y_scale")))
    return K.requantize_float(acc, K.channel_shape(mult, 4, 1), node.attr("y_zero_point"),
                              node.attr("y_dtype"))


def _qlinear_matmul(node, a, b):
    acc = (a.astype(np.float64) - np.float64(node.attr("a_zero_point"))) @ \
        (b.astype(np.float64) - np.asarray(node.attr("b_zero_point"), np.float64))
    mult = (np.float32(node.attr("a_scale")) * np.asarray(node.attr("b_scale"), np.float32)
            / np.float32(node.attr("y_scale")))
    return K.requantize_float(acc, mult, node.attr("y_zero_point"), node.attr("y_dtype"))


FLOAT_OPS: dict[str, Callable] = {
    "conv2d": _conv,
    "dense": _dense,
    "matmul": lambda n, a, b: np.matmul(a, b),
    "add": lambda n, a, b: a + b,
    "sub": lambda n, a, b: a - b,
    "mul": lambda n, a, b: a * b,
    "relu": lambda n, x: np.maximum(x, np.zeros((), x.dtype)),
    "clip": _clip,
    "identity": lambda n, x: x,
    "batch_norm": lambda n, x, s, b, m, v: K.batch_norm(x, s, b, m, v, n.attr("epsilon", 1e-5)),
    "max_pool": _pool,
    "avg_pool": _pool,
    "global_avg_pool": lambda n, x: K.global_avg_pool(x),
    "flatten": lambda n, x: x.reshape(int(np.prod(x.shape[:n.attr("axis", 1)])), -1),
    "reshape": lambda n, x: x.reshape(n.attr("shape")),
    "transpose": lambda n, x: np.ascontiguousarray(x.transpose(n.attr("perm"))),
    "concat": lambda n, *xs: np.concatenate(xs, axis=n.attr("axis")),
    "pad": _pad,
    "softmax": lambda n, x: K.softmax(x, n.attr("axis", -1)),
    "quantize": _quantize,
    "dequantize": _dequantize,
    "qlinear_conv": _qlinear_conv,
    "qlinear_matmul": _qlinear_matmul,
    "pack": lambda n, x: pack_array(x, n.attr("blocks")),
    "unpack": lambda n, x: unpack_array(x, n.attr("shape")),
}


def run_body(node: Node, args, table: Mapping[str, Callable]) -> np.ndarray:
    """Evaluate a fused_elementwise body with the kernels of `table`."""
    env = {f"${i}": a for i, a in enumerate(args)}
    for inner in node.attr("body"):
        env[inner.outputs[0]] = np.asarray(table[inner.op](inner, *[env[v] for v in inner.inputs]))
    return env[node.attr("body")[-1].outputs[0]]


FLOAT_OPS["fused_elementwise"] = lambda n, *args: run_body(n, args, FLOAT_OPS)


def check_feeds(graph: Graph, feeds) -> dict[str, np.ndarray]:
    """Feeds as a {name: array} dict (a bare array for a single-input graph), checked."""
    if isinstance(feeds, np.ndarray):
        if len(graph.inputs) != 1:
            raise GraphError(f"feeds must name each of the inputs {list(graph.inputs)}, "
                             f"not a single array")
        feeds = {graph.inputs[0]: feeds}
    missing = [v for v in graph.inputs if v not in feeds]
    if missing:
        raise GraphError(f"feeds must include input {missing[0]!r}, not only {sorted(feeds)}")
    checked = {}
    for value in graph.inputs:
        array = np.asarray(feeds[value])
        want = graph.types[value]
        if tuple(array.shape) != want.shape or str(array.dtype) != want.dtype:
            raise GraphError(f"input {value!r} must be {want}, "
                             f"not {array.dtype}[{'x'.join(map(str, array.shape))}]")
        checked[value] = array
    return checked


def execute(graph: Graph, feeds, table: Mapping[str, Callable],
            keep_all: bool = False) -> dict[str, np.ndarray]:
    """Evaluate `graph` with one kernel per op from `table`; free values after last use."""
    env: dict[str, np.ndarray] = dict(graph.constants)
    env.update(check_feeds(graph, feeds))
    last_use = {v: i for i, node in enumerate(graph.nodes) for v in node.inputs}
    keep = set(graph.outputs)
    for i, node in enumerate(graph.nodes):
        try:
            kernel = table[node.op]
        except KeyError:
            raise GraphError(f"op of node {node.name!r} must be one this interpreter runs, "
                             f"not {node.op!r}") from None
        args = [env[v] if v else None for v in node.inputs]
        while args and args[-1] is None:
            args.pop()
        result = kernel(node, *args)
        env[node.outputs[0]] = np.asarray(result)
        if not keep_all:
            for v in node.inputs:
                if last_use.get(v) == i and v not in keep and v not in graph.constants:
                    env.pop(v, None)
    if keep_all:
        return env
    return {v: env[v] for v in graph.outputs}


def run(graph: Graph, feeds, keep_all: bool = False) -> dict[str, np.ndarray]:
    """Run the float reference interpreter; returns {output name: array}."""
    return execute(graph, feeds, FLOAT_OPS, keep_all)


def node_kernel(node: Node) -> Callable:
    return FLOAT_OPS[node.op]
