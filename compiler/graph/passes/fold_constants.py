"""Constant folding: evaluate nodes whose inputs are all constants (with a size guard).

A node is folded only if its op has a float reference kernel (the op table) and its output
is at most `ctx.fold_limit_bytes` (folding must not blow a small graph up into huge
constants).
Identity nodes are removed here too."""
from __future__ import annotations

import numpy as np

from ..ir import Graph
from ..opdef import opdef
from .rewrite import PassContext, Rewriter


def fold_constants(graph: Graph, ctx: PassContext) -> Graph:
    rw = Rewriter(graph)
    folded = 0
    for node in graph.nodes:
        if node.op == "identity":
            rw.alias(node.outputs[0], rw.value(node.inputs[0]))
            continue
        values = [rw.constant_value(v) if v else None for v in node.inputs]
        reference = opdef(node.op, node.name).reference
        foldable = (reference is not None and len(node.outputs) == 1
                    and all(v is not None for v, name in zip(values, node.inputs) if name)
                    and graph.types[node.outputs[0]].nbytes <= ctx.fold_limit_bytes)
        if not foldable:
            rw.keep(node)
            continue
        args = list(values)
        while args and args[-1] is None:
            args.pop()
        result = np.asarray(reference(node, *args))
        want = graph.types[node.outputs[0]]
        result = result.astype(want.dtype).reshape(want.shape)
        rw.alias(node.outputs[0], rw.const(result, hint=node.name))
        folded += 1
    return rw.finish()
