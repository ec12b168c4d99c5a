"""Graph verifier: the invariants every pass must keep (run between passes)."""
from __future__ import annotations

import numpy as np

from .errors import GraphError
from .ir import Graph, type_of_array
from .ops import infer_types

TARGETS = ("accel", "cpu")


def verify(graph: Graph) -> Graph:
    """Check `graph` and return it; raise GraphError naming the first broken invariant."""
    _check_sources(graph)
    defined = set(graph.inputs) | set(graph.constants)
    node_names = set()
    for node in graph.nodes:
        if node.name in node_names:
            raise GraphError(f"node name must be unique, not repeated {node.name!r}")
        node_names.add(node.name)
        for value in node.inputs:
            if value and value not in defined:
                raise GraphError(f"input {value!r} of node {node.name!r} must be defined "
                                 f"before use (topological order), not later or never")
        in_types = [graph.types[v] if v else None for v in node.inputs]
        expected = infer_types(node, in_types)
        for value, want in zip(node.outputs, expected):
            if value in defined:
                raise GraphError(f"value {value!r} must be defined once, not again by "
                                 f"node {node.name!r}")
            got = graph.types.get(value)
            if got != want:
                raise GraphError(f"type of {value!r} (output of {node.name!r}) must be "
                                 f"{want}, not {got}")
            defined.add(value)
        target = node.attr("target")
        if target is not None and target not in TARGETS:
            raise GraphError(f"target of node {node.name!r} must be one of {TARGETS}, "
                             f"not {target!r}")
    for value in graph.outputs:
        if value not in defined:
            raise GraphError(f"graph output {value!r} must be a defined value, not undefined")
    stray = set(graph.types) - defined
    if stray:
        raise GraphError(f"types must describe only defined values, not {sorted(stray)[:3]}")
    return graph


def _check_sources(graph: Graph) -> None:
    for value in graph.inputs:
        if value in graph.constants:
            raise GraphError(f"input {value!r} must not also be a constant")
        if value not in graph.types:
            raise GraphError(f"input {value!r} must have a type, not none")
    for value, array in graph.constants.items():
        if not isinstance(array, np.ndarray):
            raise GraphError(f"constant {value!r} must be a numpy array, "
                             f"not {type(array).__name__}")
        if graph.types.get(value) != type_of_array(array):
            raise GraphError(f"type of constant {value!r} must match its array "
                             f"{type_of_array(array)}, not {graph.types.get(value)}")
