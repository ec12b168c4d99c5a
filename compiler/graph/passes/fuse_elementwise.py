"""Fusion of elementwise chains on the CPU fallback into one `fused_elementwise` node.

A maximal chain of single-consumer elementwise nodes with the same output shape (e.g. the
float path's `add(residual) -> relu`, or `dequantize -> add -> quantize`) becomes one node
whose `body` attribute holds the original nodes: its inputs are named "$0", "$1", ... (the
fused node's inputs, in first-use order) or the output of an earlier body node. The LLVM
fallback compiles a body into one loop instead of one pass over memory per op."""
from __future__ import annotations

from ..ir import Graph, Node
from ..opdef import opdef
from .rewrite import PassContext, Rewriter, single_consumer


def _fusible(node: Node) -> bool:
    """An elementwise op (the op table's flag) that runs on the CPU."""
    return opdef(node.op, node.name).elementwise and node.attr("target", "cpu") == "cpu"


def find_chains(graph: Graph) -> list[list[Node]]:
    chains, seen = [], set()
    for node in graph.nodes:
        if node.name in seen or not _fusible(node):
            continue
        chain = [node]
        shape = graph.types[node.outputs[0]].shape
        while (user := single_consumer(graph, chain[-1].outputs[0])) is not None and \
                _fusible(user) and graph.types[user.outputs[0]].shape == shape:
            chain.append(user)
        if len(chain) > 1:
            chains.append(chain)
            seen.update(n.name for n in chain)
    return chains


def _body(chain: list[Node]) -> tuple[tuple[str, ...], tuple[Node, ...]]:
    inputs: list[str] = []
    local = {}
    body = []
    for node in chain:
        args = []
        for v in node.inputs:
            if v in local:
                args.append(local[v])
            else:
                if v not in inputs:
                    inputs.append(v)
                args.append(f"${inputs.index(v)}")
        out = f"%{len(body)}"
        local[node.outputs[0]] = out
        body.append(Node(node.name, node.op, tuple(args), (out,),
                         {k: v for k, v in node.attrs.items() if k != "target"}))
    return tuple(inputs), tuple(body)


def fuse_elementwise(graph: Graph, ctx: PassContext) -> Graph:
    chains = {chain[-1].name: chain for chain in find_chains(graph)}
    inner = {n.name for chain in chains.values() for n in chain[:-1]}
    rw = Rewriter(graph)
    for node in graph.nodes:
        if node.name in chains:
            chain = chains[node.name]
            inputs, body = _body(chain)
            rw.emit_node("fused_elementwise", [rw.value(v) for v in inputs],
                         dict(body=body, target="cpu"), f"{chain[0].name}_fused", node.outputs)
        elif node.name not in inner:
            rw.keep(node)
    return rw.finish()
