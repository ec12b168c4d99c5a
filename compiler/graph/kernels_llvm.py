"""LLVM CPU kernels (compiler/cpu, JIT through llvmlite) and where each applies.

The op table (opdefs/) names them as each operator's `llvm` kernel with its `llvm_when`
predicate `(node, input types) -> bool`. Every kernel is `fn(node, *arrays, knobs=None)`
where the compiler/cpu operator takes tuning knobs (conv, dense, pooling, softmax), else
`fn(node, *arrays)`. compiler/cpu is imported on first use (llvmlite is optional).
"""
from __future__ import annotations

import numpy as np

from . import kernels_cpu as N


def _cpu():
    from .. import cpu
    return cpu


def is_float(types) -> bool:
    return all(t is None or t.dtype == "float32" for t in types)


def float_only(node, types) -> bool:
    return is_float(types)


# ---- kernels -------------------------------------------------------------------------------
def conv(node, x, w, b=None, knobs=None):
    return _cpu().conv2d(x, w, b, node.attr("strides", (1, 1)), node.attr("pads", (0,) * 4),
                         node.attr("dilations", (1, 1)), node.attr("groups", 1), knobs=knobs)


def qconv(node, x, w, bias=None, residual=None, knobs=None):
    acc = _cpu().conv2d(x, w, None, node.attr("strides", (1, 1)), node.attr("pads", (0,) * 4),
                        node.attr("dilations", (1, 1)), node.attr("groups", 1), knobs=knobs)
    return N.requant_epilogue(node, acc, bias, residual)


def max_pool(node, x, knobs=None):
    return _cpu().max_pool2d(x, node.attr("kernel"), node.attr("strides", (1, 1)),
                             node.attr("pads", (0,) * 4), node.attr("dilations", (1, 1)),
                             knobs=knobs)


def avg_pool(node, x, knobs=None):
    return _cpu().avg_pool2d(x, node.attr("kernel"), node.attr("strides", (1, 1)),
                             node.attr("pads", (0,) * 4),
                             bool(node.attr("count_include_pad", 0)), knobs=knobs)


def dense(node, x, w, b=None, knobs=None):
    return _cpu().dense(x, w, b, knobs=knobs)


def global_avg_pool(node, x, knobs=None):
    return _cpu().global_avg_pool(x, knobs=knobs).reshape(x.shape[:2] + (1, 1))


def softmax(node, x, knobs=None):
    return _cpu().softmax(x.reshape(-1, x.shape[-1]), knobs=knobs).reshape(x.shape)


def quantize(node, x):
    axis = node.attr("axis", 1) if np.size(node.attr("scale")) > 1 else None
    return _cpu().quantize(x, node.attr("scale"), node.attr("zero_point", 0), axis)


def dequantize(node, x):
    axis = node.attr("axis", 1) if np.size(node.attr("scale")) > 1 else None
    return _cpu().dequantize(x, node.attr("scale"), node.attr("zero_point", 0), axis)


def binary(op: str):
    """compiler/cpu's broadcasting binary `op` (add, sub, mul, div, max, min)."""
    return lambda node, a, b: _cpu().binary(op, a, b)


def unary(op: str):
    """compiler/cpu's unary `op` (relu, neg, exp, log, sqrt, abs, tanh, sigmoid)."""
    return lambda node, x: _cpu().unary(op, x)


def clip(node, x):
    return _cpu().clip(x, node.attr("lo"), node.attr("hi"))


def transpose(node, x):
    return _cpu().transpose(x, node.attr("perm"))


def batch_norm(node, x, s, b, m, v):
    return _cpu().batch_norm(x, s, b, m, v, node.attr("epsilon", 1e-5))


# ---- predicates ----------------------------------------------------------------------------
def when_conv(node, types) -> bool:
    return is_float(types) and node.attr("layout", "plain") == "plain"


def when_qconv(node, types) -> bool:
    return types[0].dtype == "int8"


def no_ceil(node, types) -> bool:
    return not node.attr("ceil_mode", 0)


def when_max_pool(node, types) -> bool:
    return no_ceil(node, types) and types[0].dtype in ("float32", "int8")


def when_avg_pool(node, types) -> bool:
    return no_ceil(node, types) and is_float(types)


def when_global_avg_pool(node, types) -> bool:
    return is_float(types) and types[0].rank == 4


def when_softmax(node, types) -> bool:
    return is_float(types) and node.attr("axis", -1) in (-1, types[0].rank - 1)


def when_quantize(node, types) -> bool:
    scale = np.asarray(node.attr("scale"))
    return is_float(types) and node.attr("dtype", "int8") == "int8" and scale.ndim <= 1 and \
        types[0].dtype in ("float32", "int8", "int32")


def when_dequantize(node, types) -> bool:
    return types[0].dtype in ("int8", "int32")


def when_clip(node, types) -> bool:
    return is_float(types) and node.attr("lo") is not None and node.attr("hi") is not None


def when_batch_norm(node, types) -> bool:
    return is_float(types) and types[0].rank == 4


def always(node, types) -> bool:
    return True
