"""Independent int8 reference interpreter of a quantised graph.

Integer ops are evaluated exactly as the accelerator computes them, by each op's `int8`
kernel (kernels_int.py: int8 x int8 products accumulated exactly and wrapped to int32,
wrapping adds, arithmetic shifts, clips, narrowing casts). Those kernels share no code with
the float interpreter, so the accelerator's results (and the compiler's rewrites) can be
checked against them bit for bit. Float ops between `dequantize` / `quantize` nodes, and
ONNX's own integer tensors (shapes, indices), run the float reference; so do the compiled
module's CPU steps there, unless an op's LLVM kernel equals its reference exactly
(compiler/exec/cpu_ops.py), so end to end a module's run equals this reference bit for bit,
its float values included.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from .errors import GraphError
from .interp import execute, run_body
from .ir import Graph, Node
from .kernels_int import int_conv2d, int_dense, shift_right, wrap32  # noqa: F401 (API)
from .opdef import opdef


def _dispatch(node: Node, *args) -> np.ndarray:
    """The int8 kernel for integer operands (or always, where the op says so), else the
    float reference."""
    d = opdef(node.op, node.name)
    if d.runs_body:
        return run_body(node, args, _kernel_for)
    integer = bool(args) and args[0].dtype.kind in "iu"
    if d.int8 is not None and (d.int8_always or integer or d.reference is None):
        return d.int8(node, *args)
    if integer and d.quant != "float":
        raise GraphError(f"op of integer node {node.name!r} must be one the int8 "
                         f"reference runs, not {node.op!r}")
    if d.reference is None:
        raise GraphError(f"op of node {node.name!r} must be one the reference "
                         f"interpreters run, not {node.op!r}")
    return d.reference(node, *args)


def _kernel_for(node: Node) -> Callable:
    return _dispatch


def run_node(node: Node, *args) -> np.ndarray:
    """One node evaluated as the int8 reference evaluates it (e.g. to tabulate an island)."""
    return np.asarray(_dispatch(node, *args))


def run_int8(graph: Graph, feeds, keep_all: bool = False) -> dict[str, np.ndarray]:
    """Evaluate a quantised graph (plain, packed or fused) with exact integer arithmetic."""
    return execute(graph, feeds, _kernel_for, keep_all)


def int8_step_mismatches(graph: Graph, values: dict) -> list[str]:
    """Integer values of a run (`values`: every value, e.g. `module.run(x, keep=True)`)
    that differ from the int8 reference applied to that run's own inputs of the node.

    Where a run differs end to end, this tells a wrong integer kernel (listed here) from a
    difference carried in from an earlier node (not listed)."""
    bad = []
    env = {**graph.constants, **values}
    for node in graph.nodes:
        out = node.outputs[0]
        if out not in values or values[out].dtype.kind not in "iu" or \
                any(v and v not in env for v in node.inputs):
            continue
        args = [env[v] if v else None for v in node.inputs]
        while args and args[-1] is None:
            args.pop()
        if not np.array_equal(np.asarray(_dispatch(node, *args)), values[out]):
            bad.append(out)
    return bad
