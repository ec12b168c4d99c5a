"""CPU kernels for every node the accelerator does not run: one small interface.

    kernel = cpu_kernel(node, types)          # CpuKernel
    y = kernel(*arrays)                       # kernel.impl is "llvm" or "numpy"

The kernels come from the op table (compiler/graph/opdef.py, opdefs/): each op's LLVM
kernel where it has one that applies to the node's dtypes and attributes (compiler/cpu, JIT
through llvmlite), else its vectorised numpy kernel (never a per-element Python loop).
Integer kernels follow the graph IR's integer semantics exactly (wrapping int32, arithmetic
shifts, low-bit narrowing), so a quantised model matches the int8 reference bit for bit;
float kernels follow ONNX. In an int8 graph (``exact``), a float op sits between int8 steps,
where a last-bit difference can flip a later rounding: it runs the LLVM kernel only where
the op table says that kernel equals the float reference exactly (``OpDef.llvm_exact``),
else the reference itself, the kernel the int8 reference interpreter runs; the module and
the reference then compute the same float values bit for bit. Arrays reach the kernels
C-contiguous (numpy's reductions sum in an order that depends on the strides).
The LLVM conv, dense, pooling and softmax kernels are tunable:
inside a tuning context (``tune.ApplyBest``) a kernel made for a node gets the best
recorded knobs of the node's task (``tune/templates/cpu.py`` ``cpu_tasks_of``), else the
heuristic's.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache, partial
from typing import Callable

import numpy as np

from ..graph.errors import GraphError
from ..graph.interp import contiguous, execute
from ..graph.ir import ML_DTYPES, Graph, Node, TensorType
from ..graph.opdef import REGISTRY, opdef


@lru_cache(maxsize=None)
def llvm_available() -> bool:
    try:
        import llvmlite  # noqa: F401
        from .. import cpu  # noqa: F401
    except ImportError:
        return False
    return True


@dataclass
class CpuKernel:
    op: str
    impl: str                       # "llvm" or "numpy"
    fn: Callable                    # fn(node, *arrays) -> array
    node: Node

    def __call__(self, *arrays) -> np.ndarray:
        return contiguous(self.fn(self.node, *arrays))


def _fused_body(node: Node, in_types, prefer: str, exact: bool) -> CpuKernel:
    """A node that runs a chain of nodes (`OpDef.runs_body`: fused_elementwise): one
    kernel per body node, run in order."""
    env_types = {f"${i}": t for i, t in enumerate(in_types)}
    from ..graph.ops import infer_types
    kernels = []
    for inner in node.attr("body"):
        types = [env_types[v] for v in inner.inputs]
        kernels.append(cpu_kernel(inner, types, prefer, exact))
        for value, t in zip(inner.outputs, infer_types(inner, types)):
            env_types[value] = t

    def run(n, *args):
        env = {f"${i}": a for i, a in enumerate(args)}
        for inner, k in zip(n.attr("body"), kernels):
            env[inner.outputs[0]] = contiguous(k(*[env[v] for v in inner.inputs]))
        return env[n.attr("body")[-1].outputs[0]]
    impl = "llvm" if any(k.impl == "llvm" for k in kernels) else "numpy"
    return CpuKernel(node.op, impl, run, node)


def _tuned(fn: Callable, node: Node, in_types) -> Callable:
    """``fn`` with the knobs of the node's tuning task bound, where a tuning context
    (compiler/tune/apply.py ``ApplyBest``) has a record of it."""
    from ..tune.apply import current, lookup
    if current() is None:
        return fn
    from ..tune.templates.cpu import cpu_tasks_of
    task = cpu_tasks_of(node, in_types)
    knobs = lookup(task) if task is not None else None
    return fn if knobs is None else partial(fn, knobs=knobs)


def _llvm_can_hold(in_types) -> bool:
    """The LLVM kernels take non-empty tensors of numpy's own dtypes."""
    return all(t is None or (t.size > 0 and t.dtype not in ML_DTYPES) for t in in_types)


def _is_float(in_types) -> bool:
    return any(t is not None and t.dtype.startswith("float") for t in in_types)


def runs_reference(node: Node, in_types, exact: bool) -> bool:
    """In an int8 graph (``exact``), a float node whose LLVM kernel is not exact runs its
    float reference (so it has no LLVM kernel to tune either)."""
    d = opdef(node.op, node.name)
    return exact and _is_float(in_types) and d.reference is not None and not d.llvm_exact


def cpu_kernel(node: Node, in_types: list[TensorType | None], prefer: str = "llvm",
               exact: bool = False) -> CpuKernel:
    """The kernel that runs `node` on the CPU (LLVM where available and `prefer`red).

    ``exact``: the node is in an int8 graph: a float node takes an LLVM kernel only if
    the op table marks it ``llvm_exact``, else its float reference."""
    d = opdef(node.op, node.name)
    if d.runs_body:
        return _fused_body(node, in_types, prefer, exact)
    if prefer == "llvm" and d.llvm is not None and llvm_available() and \
            _llvm_can_hold(in_types) and not runs_reference(node, in_types, exact):
        if d.llvm_when(node, [t for t in in_types if t is not None] or [None]):
            return CpuKernel(node.op, "llvm", _tuned(d.llvm, node, in_types), node)
    if exact and _is_float(in_types) and d.reference is not None:   # no exact LLVM kernel
        return CpuKernel(node.op, "numpy", d.reference, node)
    if d.cpu_kernel is None:
        runnable = sorted(n for n, o in REGISTRY.ops.items() if o.cpu_kernel is not None)
        raise GraphError(f"op of node {node.name!r} must be one the CPU fallback runs "
                         f"({runnable}), not {node.op!r}")
    return CpuKernel(node.op, "numpy", d.cpu_kernel, node)


def run_cpu(graph: Graph, feeds, prefer: str = "llvm", keep_all: bool = False) -> dict:
    """Run every node of `graph` with its CPU kernel (no accelerator, no memory plan): the
    float path of a graph compiled with ``quantize=False``."""
    kernels: dict[str, CpuKernel] = {}

    def kernel_for(node: Node) -> Callable:
        if node.name not in kernels:
            types = [graph.types[v] if v else None for v in node.inputs]
            kernels[node.name] = cpu_kernel(node, types, prefer)
        return lambda n, *args: kernels[n.name](*args)
    return execute(graph, feeds, kernel_for, keep_all)
