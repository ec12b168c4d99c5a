"""Dead-code elimination: drop nodes and constants nothing reachable from the outputs uses."""
from __future__ import annotations

from ..ir import Graph
from .rewrite import PassContext


def eliminate_dead_code(graph: Graph, ctx: PassContext | None = None) -> Graph:
    live = set(graph.outputs)
    kept = []
    for node in reversed(graph.nodes):
        if any(o in live for o in node.outputs):
            kept.append(node)
            live.update(v for v in node.inputs if v)
    kept.reverse()
    keep_values = live | set(graph.inputs)
    for node in kept:
        keep_values.update(node.outputs)
    constants = {k: v for k, v in graph.constants.items() if k in live}
    types = {k: t for k, t in graph.types.items() if k in keep_values or k in constants}
    return graph.replace(nodes=tuple(kept), constants=constants, types=types)
