"""Shared machinery of the graph passes: a rebuilding rewriter and the pass context."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping

import numpy as np

from vtalab.spec.config import Config, preset

from ..ir import Graph, GraphBuilder, Node


@dataclass(frozen=True)
class PassContext:
    """Options every pass may read. Passed by argument; no globals."""

    config: Config = field(default_factory=lambda: preset("default"))
    calibration: Any = None          # samples for int8 calibration (see passes.quantize)
    per_channel: bool = False        # per-output-channel weight scales
    quantize: bool = True            # False: keep the float graph (everything on the CPU)
    fold_limit_bytes: int = 64 << 20 # constant folding never materialises more than this
    alignment: int | None = None     # memory planner's; None: runtime default_alignment(config)


class Rewriter:
    """Rebuild a graph node by node: keep, replace or drop nodes; remap values.

    Values keep their names unless a pass replaces them (`alias`)."""

    def __init__(self, graph: Graph):
        self.graph = graph
        self.b = GraphBuilder(graph.name, graph.meta)
        self._alias: dict[str, str] = {}
        for value in graph.inputs:
            t = graph.types[value]
            self.b.add_input(value, t.shape, t.dtype)
        for value, array in graph.constants.items():
            self.b.add_const(value, array)

    def value(self, old: str) -> str:
        while old in self._alias:
            old = self._alias[old]
        return old

    def alias(self, old: str, new: str) -> None:
        """From now on, uses of `old` read `new`."""
        if old != new:
            self._alias[old] = new

    def keep(self, node: Node) -> tuple[str, ...]:
        inputs = [self.value(v) if v else "" for v in node.inputs]
        return self.emit_node(node.op, inputs, dict(node.attrs), node.name, node.outputs)

    def emit_node(self, op: str, inputs, attrs: Mapping | None = None, name: str | None = None,
                  outputs: Iterable[str] | None = None) -> tuple[str, ...]:
        free = None
        if outputs:
            outputs = list(outputs)
            free = outputs if all(o not in self.b.types for o in outputs) else None
        new = self.b.add_node(op, inputs, attrs or {}, name=name, outputs=free,
                              num_outputs=len(outputs) if outputs else 1)
        if outputs and free is None:
            for old, value in zip(outputs, new):
                self.alias(old, value)
        return new

    def op(self, op: str, *inputs: str, name: str | None = None, **attrs) -> str:
        return self.b.add_node(op, inputs, attrs, name=name)[0]

    def const(self, array, hint: str = "const") -> str:
        return self.b.add_const(None, np.asarray(array), hint=hint)

    def constant_value(self, value: str) -> np.ndarray | None:
        return self.b.constants.get(self.value(value))

    def finish(self, **meta) -> Graph:
        self.b.set_outputs([self.value(v) for v in self.graph.outputs])
        self.b.meta.update(meta)
        return self.b.build()


def single_consumer(graph: Graph, value: str) -> Node | None:
    """The one node reading `value`, if exactly one does and it is not a graph output."""
    users = graph.consumers(value)
    if len(users) != 1 or value in graph.outputs:
        return None
    return users[0]
