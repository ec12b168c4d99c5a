"""Float reference interpreter of the graph IR (numpy, ONNX semantics).

`run(graph, feeds)` evaluates every node in order with its op's float reference kernel
(the op table, opdef.py) and returns the graph outputs: the imported ops, ONNX's
QuantizeLinear/DequantizeLinear and QLinearConv/MatMul (as onnxruntime computes them) and
the layout ops. The integer ops of a power-of-two quantised graph are evaluated by the
independent `int8_ref` interpreter instead.
"""
from __future__ import annotations

from typing import Callable, Mapping

import numpy as np

from .errors import GraphError
from .ir import Graph, Node
from .opdef import opdef


def reference_kernel(node: Node) -> Callable:
    """The float reference kernel of `node`'s op (from the op table)."""
    kernel = opdef(node.op, node.name).reference
    if kernel is None:
        raise GraphError(f"op of node {node.name!r} must be one the float reference "
                         f"interpreter runs, not {node.op!r} (an integer-only op)")
    return kernel


def contiguous(array) -> np.ndarray:
    """`array` as a C-contiguous ndarray (0-d stays 0-d). Every interpreter stores its
    values so: numpy's reductions sum in an order that depends on the strides, and an
    int8 graph's float values must not depend on which interpreter made them."""
    array = np.asarray(array)
    return array if array.flags.c_contiguous else np.ascontiguousarray(array)


def run_body(node: Node, args, kernel_for: Callable[[Node], Callable]) -> np.ndarray:
    """Evaluate a fused_elementwise body with the kernels `kernel_for(inner node)`."""
    env = {f"${i}": a for i, a in enumerate(args)}
    for inner in node.attr("body"):
        env[inner.outputs[0]] = contiguous(
            kernel_for(inner)(inner, *[env[v] for v in inner.inputs]))
    return env[node.attr("body")[-1].outputs[0]]


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
        checked[value] = contiguous(array)
    return checked


def execute(graph: Graph, feeds, kernel_for: Callable[[Node], Callable] | Mapping,
            keep_all: bool = False) -> dict[str, np.ndarray]:
    """Evaluate `graph` with the kernel `kernel_for(node)` of each node (or a mapping
    op -> kernel); free values after their last use."""
    if isinstance(kernel_for, Mapping):
        table = kernel_for
        kernel_for = lambda node: table[node.op]  # noqa: E731
    env: dict[str, np.ndarray] = dict(graph.constants)
    env.update(check_feeds(graph, feeds))
    last_use = {v: i for i, node in enumerate(graph.nodes) for v in node.inputs}
    keep = set(graph.outputs)
    for i, node in enumerate(graph.nodes):
        try:
            kernel = kernel_for(node)
        except KeyError:
            raise GraphError(f"op of node {node.name!r} must be one this interpreter runs, "
                             f"not {node.op!r}") from None
        args = [env[v] if v else None for v in node.inputs]
        while args and args[-1] is None:
            args.pop()
        result = kernel(node, *args)
        env[node.outputs[0]] = contiguous(result)
        if not keep_all:
            for v in node.inputs:
                if last_use.get(v) == i and v not in keep and v not in graph.constants:
                    env.pop(v, None)
    if keep_all:
        return env
    return {v: env[v] for v in graph.outputs}


def run(graph: Graph, feeds, keep_all: bool = False) -> dict[str, np.ndarray]:
    """Run the float reference interpreter; returns {output name: array}."""
    return execute(graph, feeds, reference_kernel, keep_all)


def node_kernel(node: Node) -> Callable:
    return reference_kernel(node)
