"""Elementwise float islands over one int8 value become a 256-entry lookup table.

In a power-of-two int8 graph (passes/quantize.py) an op the accelerator cannot run, such as
a sigmoid, runs in float between a `dequantize` and a `quantize`:

    q (int8) -> dequantize -> f1 -> f2 ... -> quantize -> y (int8)

When every op of such an island is elementwise (the op table's flag), its other operands
are scalar constants and its inner values are read only inside it, y[i] depends on q[i]
alone: y = table[q + 128], the island evaluated on the 256 int8 values. Ops that only move
elements (`moves_data`: reshape, transpose, ...) just before the quantize commute with it:
they move the table's int8 results instead. The table is made
by the kernels the int8 reference runs on the island (its float reference), so the `lut`
node computes the island's own values: exact, and one gather instead of float passes.
E.g. SiLU (x * sigmoid(x)), HardSwish, HardSigmoid, GELU, a scale by a constant.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..int8_ref import run_node
from ..ir import Graph, Node
from ..opdef import opdef
from .dead_code import eliminate_dead_code
from .rewrite import PassContext, Rewriter

INT8_VALUES = np.arange(-128, 128).astype(np.int8)


def _per_tensor(node: Node) -> bool:
    """A dequantize / quantize with one power-of-two scale and zero point 0 (int8)."""
    scale = np.asarray(node.attr("scale"), np.float64)
    if scale.size != 1 or np.any(np.asarray(node.attr("zero_point", 0)) != 0):
        return False
    exponent = -np.log2(float(scale.reshape(-1)[0]))
    return exponent == np.round(exponent)


def _island_op(graph: Graph, node: Node, shape) -> bool:
    """An elementwise float op whose constant operands are scalars, of the source's shape."""
    if not opdef(node.op, node.name).elementwise or node.op in ("quantize", "dequantize"):
        return False
    out = graph.types[node.outputs[0]]
    if out.dtype != "float32" or out.shape != shape:
        return False
    return all(graph.constants[v].size == 1 for v in node.inputs if v and graph.is_constant(v))


def _tail(graph: Graph, value: str) -> list[Node]:
    """The chain of data-moving float ops (constant side operands) that ends in `value`."""
    tail = []
    node = graph.producer(value)
    while node is not None and opdef(node.op, node.name).moves_data and \
            graph.types[node.outputs[0]].dtype == "float32" and \
            all(graph.is_constant(v) for v in node.inputs[1:] if v) and \
            (not tail or len(graph.consumers(node.outputs[0])) == 1) and \
            node.outputs[0] not in graph.outputs:
        tail.insert(0, node)
        node = graph.producer(node.inputs[0])
    return tail


@dataclass
class Island:
    dequantize: Node              # int8 -> float: the island's one source
    ops: list[Node]               # elementwise, in graph order
    tail: list[Node]              # data-moving ops after them
    quantize: Node                # float -> int8: the island's end


def find_island(graph: Graph, quantize: Node) -> Island | None:
    """The island that ends at `quantize`, or None."""
    if quantize.op != "quantize" or quantize.attr("dtype", "int8") != "int8" or \
            not _per_tensor(quantize):
        return None
    tail = _tail(graph, quantize.inputs[0])
    start = tail[0].inputs[0] if tail else quantize.inputs[0]
    shape = graph.types[start].shape
    ops, sources, stack = {}, set(), [start]
    while stack:
        node = graph.producer(stack.pop())
        if node is None:
            return None                                 # a graph input, not int8
        if node.op == "dequantize":
            if graph.types[node.inputs[0]].dtype != "int8" or not _per_tensor(node) or \
                    graph.types[node.outputs[0]].shape != shape:
                return None
            sources.add(node.name)
            continue
        if node.name in ops:
            continue
        if not _island_op(graph, node, shape):
            return None
        ops[node.name] = node
        stack.extend(v for v in node.inputs if v and not graph.is_constant(v))
    if len(sources) != 1:
        return None
    inside = set(ops) | {n.name for n in tail} | {quantize.name}
    for node in ops.values():                           # inner values stay inside
        if node.outputs[0] in graph.outputs or \
                any(u.name not in inside for u in graph.consumers(node.outputs[0])):
            return None
    return Island(graph.node(sources.pop()), [n for n in graph.nodes if n.name in ops],
                  tail, quantize)


def island_table(graph: Graph, island: Island) -> np.ndarray:
    """The island evaluated on the 256 int8 values by the int8 reference's kernels."""
    source = island.dequantize.outputs[0]
    env = {source: run_node(island.dequantize, INT8_VALUES)}
    for node in island.ops:
        args = [env[v] if v in env else graph.constants[v] for v in node.inputs if v]
        env[node.outputs[0]] = run_node(node, *args)
    last = island.ops[-1].outputs[0] if island.ops else source
    return run_node(island.quantize, env[last]).astype(np.int8)


def tabulate(graph: Graph, ctx: PassContext) -> Graph:
    """Replace every tabulable island by a `lut` node (dead code drops what it replaced);
    a no-op when `ctx.quantize` is False (the float graph stays as it is)."""
    if not ctx.quantize:
        return graph
    islands = {}
    for node in graph.nodes:
        island = find_island(graph, node)
        if island is not None:
            islands[node.name] = island
    if not islands:
        return graph
    replaced = {n.name for i in islands.values() for n in i.ops + i.tail}
    rw = Rewriter(graph)
    for node in graph.nodes:
        if node.name in islands:
            _emit(rw, graph, islands[node.name])
        elif node.name not in replaced:
            rw.keep(node)
    return eliminate_dead_code(rw.finish())


def _emit(rw: Rewriter, graph: Graph, island: Island) -> None:
    """lut(q, table), then the tail's moves on the int8 result."""
    q = island.quantize
    table = rw.const(island_table(graph, island), f"{q.name}_table")
    inputs = [rw.value(island.dequantize.inputs[0]), table]
    attrs = dict(function=tuple(n.op for n in island.ops))
    if not island.tail:
        rw.emit_node("lut", inputs, attrs, q.name, q.outputs)
        return
    value = rw.op("lut", *inputs, name=f"{q.name}_lut", **attrs)
    for node in island.tail[:-1]:
        value = rw.op(node.op, value, *[rw.value(v) for v in node.inputs[1:]],
                      name=node.name, **dict(node.attrs))
    last = island.tail[-1]
    rw.emit_node(last.op, [value] + [rw.value(v) for v in last.inputs[1:]], dict(last.attrs),
                 last.name, q.outputs)
