"""CPU kernels for every node the accelerator does not run: one small interface.

    kernel = cpu_kernel(node, types)          # CpuKernel
    y = kernel(*arrays)                       # kernel.impl is "llvm" or "numpy"

Each op has a vectorised numpy kernel (never a per-element Python loop) and, where the
LLVM CPU library (compiler/cpu, JIT through llvmlite) has the operator for the node's
dtypes and attributes, an LLVM kernel that is preferred. Integer kernels follow the graph
IR's integer semantics exactly (wrapping int32, arithmetic shifts, low-bit narrowing), so a
quantised model matches the int8 reference bit for bit; float kernels follow ONNX. The LLVM
conv, dense, pooling and softmax kernels are tunable: inside a tuning context
(``tune.ApplyBest``) a kernel made for a node gets the best recorded knobs of the node's
task (``tune/templates/cpu.py`` ``cpu_tasks_of``), else the heuristic's.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache, partial
from typing import Callable

import numpy as np

from ..graph.errors import GraphError
from ..graph.ir import Node, TensorType
from ..graph.layout import pack_array, unpack_array
from . import cpu_numpy as N


@lru_cache(maxsize=None)
def llvm_available() -> bool:
    try:
        import llvmlite  # noqa: F401
        from .. import cpu  # noqa: F401
    except ImportError:
        return False
    return True


def _cpu():
    from .. import cpu
    return cpu


@dataclass
class CpuKernel:
    op: str
    impl: str                       # "llvm" or "numpy"
    fn: Callable                    # fn(node, *arrays) -> array
    node: Node

    def __call__(self, *arrays) -> np.ndarray:
        return np.asarray(self.fn(self.node, *arrays))


def _is_float(types) -> bool:
    return all(t is None or t.dtype == "float32" for t in types)


# ---- LLVM kernels (compiler/cpu): (predicate on the node and its input types, kernel) ----

def _llvm_conv(node, x, w, b=None, knobs=None):
    return _cpu().conv2d(x, w, b, node.attr("strides", (1, 1)), node.attr("pads", (0,) * 4),
                         node.attr("dilations", (1, 1)), node.attr("groups", 1), knobs=knobs)


def _llvm_qconv(node, x, w, bias=None, residual=None, knobs=None):
    acc = _cpu().conv2d(x, w, None, node.attr("strides", (1, 1)), node.attr("pads", (0,) * 4),
                        node.attr("dilations", (1, 1)), node.attr("groups", 1), knobs=knobs)
    return N.requant_epilogue(node, acc, bias, residual)


def _llvm_pool(node, x, knobs=None):
    kernel, strides = node.attr("kernel"), node.attr("strides", (1, 1))
    pads = node.attr("pads", (0,) * 4)
    if node.op == "max_pool":
        return _cpu().max_pool2d(x, kernel, strides, pads, node.attr("dilations", (1, 1)),
                                 knobs=knobs)
    return _cpu().avg_pool2d(x, kernel, strides, pads, bool(node.attr("count_include_pad", 0)),
                             knobs=knobs)


def _llvm_dense(node, x, w, b=None, knobs=None):
    return _cpu().dense(x, w, b, knobs=knobs)


def _llvm_global_avg_pool(node, x, knobs=None):
    return _cpu().global_avg_pool(x, knobs=knobs).reshape(x.shape[:2] + (1, 1))


def _llvm_softmax(node, x, knobs=None):
    return _cpu().softmax(x.reshape(-1, x.shape[-1]), knobs=knobs).reshape(x.shape)


def _llvm_quantize(node, x):
    axis = node.attr("axis", 1) if np.size(node.attr("scale")) > 1 else None
    return _cpu().quantize(x, node.attr("scale"), node.attr("zero_point", 0), axis)


def _llvm_dequantize(node, x):
    axis = node.attr("axis", 1) if np.size(node.attr("scale")) > 1 else None
    return _cpu().dequantize(x, node.attr("scale"), node.attr("zero_point", 0), axis)


def _float_binary(op):
    return lambda node, a, b: _cpu().binary(op, a, b)


def _no_ceil(node, types):
    return not node.attr("ceil_mode", 0)


def _plain_quant(node, types):
    scale = np.asarray(node.attr("scale"))
    return node.attr("dtype", "int8") == "int8" and scale.ndim <= 1 and \
        types[0].dtype in ("float32", "int8", "int32")


LLVM: dict[str, tuple[Callable, Callable]] = {
    "conv2d": (lambda n, t: _is_float(t) and n.attr("layout", "plain") == "plain", _llvm_conv),
    "qconv2d": (lambda n, t: t[0].dtype == "int8", _llvm_qconv),
    "dense": (lambda n, t: _is_float(t), _llvm_dense),
    "max_pool": (lambda n, t: _no_ceil(n, t) and t[0].dtype in ("float32", "int8"), _llvm_pool),
    "avg_pool": (lambda n, t: _no_ceil(n, t) and _is_float(t), _llvm_pool),
    "global_avg_pool": (lambda n, t: _is_float(t) and t[0].rank == 4, _llvm_global_avg_pool),
    "softmax": (lambda n, t: _is_float(t) and n.attr("axis", -1) in (-1, t[0].rank - 1),
                _llvm_softmax),
    "quantize": (lambda n, t: _is_float(t) and _plain_quant(n, t), _llvm_quantize),
    "dequantize": (lambda n, t: t[0].dtype in ("int8", "int32"), _llvm_dequantize),
    "add": (lambda n, t: _is_float(t), _float_binary("add")),
    "sub": (lambda n, t: _is_float(t), _float_binary("sub")),
    "mul": (lambda n, t: _is_float(t), _float_binary("mul")),
    "relu": (lambda n, t: _is_float(t), lambda n, x: _cpu().relu(x)),
    "clip": (lambda n, t: _is_float(t) and n.attr("lo") is not None and n.attr("hi") is not None,
             lambda n, x: _cpu().clip(x, n.attr("lo"), n.attr("hi"))),
    "transpose": (lambda n, t: True, lambda n, x: _cpu().transpose(x, n.attr("perm"))),
    "batch_norm": (lambda n, t: _is_float(t) and t[0].rank == 4,
                   lambda n, x, s, b, m, v: _cpu().batch_norm(x, s, b, m, v,
                                                              n.attr("epsilon", 1e-5))),
}

# ---- numpy kernels: every op the final graph can hold ------------------------------------
NUMPY: dict[str, Callable] = {
    "conv2d": N.conv2d, "qconv2d": N.qconv2d, "accel_conv2d": N.qconv2d,
    "dense": N.dense, "qdense": N.qdense, "accel_dense": N.qdense,
    "matmul": lambda n, a, b: N.matmul(a, b),
    "add": lambda n, a, b: N.binary("add", a, b), "sub": lambda n, a, b: N.binary("sub", a, b),
    "mul": lambda n, a, b: N.binary("mul", a, b),
    "relu": lambda n, x: np.maximum(x, np.zeros((), x.dtype)),
    "clip": N.clip, "shr": lambda n, x: N.shift_right(x, n.attr("amount", 0)),
    "cast": lambda n, x: x.astype(n.attr("dtype")),
    "identity": lambda n, x: x,
    "max_pool": N.max_pool, "avg_pool": N.avg_pool, "global_avg_pool": N.global_avg_pool,
    "batch_norm": N.batch_norm, "softmax": lambda n, x: N.softmax(x, n.attr("axis", -1)),
    "flatten": lambda n, x: x.reshape(int(np.prod(x.shape[:n.attr("axis", 1)])), -1),
    "reshape": lambda n, x: x.reshape(n.attr("shape")),
    "transpose": lambda n, x: np.ascontiguousarray(x.transpose(n.attr("perm"))),
    "concat": lambda n, *xs: np.concatenate(xs, axis=n.attr("axis")),
    "pad": N.pad, "quantize": N.quantize, "dequantize": N.dequantize,
    "pack": lambda n, x: pack_array(x, n.attr("blocks")),
    "unpack": lambda n, x: unpack_array(x, n.attr("shape")),
}


def _fused_elementwise(node: Node, in_types, prefer: str) -> CpuKernel:
    """A chain of elementwise nodes: one kernel per body node, run in order."""
    env_types = {f"${i}": t for i, t in enumerate(in_types)}
    from ..graph.ops import infer_types
    kernels = []
    for inner in node.attr("body"):
        types = [env_types[v] for v in inner.inputs]
        kernels.append(cpu_kernel(inner, types, prefer))
        for value, t in zip(inner.outputs, infer_types(inner, types)):
            env_types[value] = t

    def run(n, *args):
        env = {f"${i}": a for i, a in enumerate(args)}
        for inner, k in zip(n.attr("body"), kernels):
            env[inner.outputs[0]] = k(*[env[v] for v in inner.inputs])
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


def cpu_kernel(node: Node, in_types: list[TensorType | None], prefer: str = "llvm") -> CpuKernel:
    """The kernel that runs `node` on the CPU (LLVM where available and `prefer`red)."""
    if node.op == "fused_elementwise":
        return _fused_elementwise(node, in_types, prefer)
    if prefer == "llvm" and node.op in LLVM and llvm_available():
        applies, fn = LLVM[node.op]
        if applies(node, [t for t in in_types if t is not None] or [None]):
            return CpuKernel(node.op, "llvm", _tuned(fn, node, in_types), node)
    if node.op not in NUMPY:
        raise GraphError(f"op of node {node.name!r} must be one the CPU fallback runs "
                         f"({sorted(NUMPY)}), not {node.op!r}")
    return CpuKernel(node.op, "numpy", NUMPY[node.op], node)
