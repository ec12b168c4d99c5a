"""Tuning tasks of the operators' tunable kernels (compiler/tune templates).

The op table (opdefs/) names them as each operator's `tune`:
`fn(node, input types, graph, cfg) -> tune.Task | None`. The CPU ones read the workload of
the op's LLVM kernel from its input types (``graph`` and ``cfg`` unused; the caller,
`tune.templates.cpu.cpu_tasks_of`, checks that the LLVM kernel applies); the accelerator
ones read the fused GEMM's shape and requantisation epilogue from the graph for ``cfg``
and raise `exec.lower.Unsupported` where the accelerator cannot run the node. compiler/tune
is imported on first use (the op table loads without the tuner).
"""
from __future__ import annotations

import numpy as np


def _cpu():
    from ..tune.templates import cpu
    return cpu


def _conv(node, types, bias: bool):
    return _cpu().conv2d_task(types[0].shape, types[1].shape, types[0].dtype,
                              node.attr("strides", (1, 1)), node.attr("pads", (0,) * 4),
                              node.attr("dilations", (1, 1)), node.attr("groups", 1), bias)


def conv2d(node, types, graph=None, cfg=None):
    """conv2d's kernel adds its optional third input, the bias."""
    return _conv(node, types, len(types) > 2)


def qconv2d(node, types, graph=None, cfg=None):
    """The fused int8 conv's kernel is the plain conv; its epilogue runs after it."""
    return _conv(node, types, False)


def dense(node, types, graph=None, cfg=None):
    if types[0].rank != 2:
        return None
    return _cpu().dense_task(types[0].shape[0], types[0].shape[1], types[1].shape[0],
                             types[0].dtype, len(types) > 2)


def _window_pool(kind: str):
    def task(node, types, graph=None, cfg=None):
        return _cpu().pool_task(kind, types[0].shape, types[0].dtype, node.attr("kernel"),
                                node.attr("strides", (1, 1)), node.attr("pads", (0,) * 4),
                                node.attr("dilations", (1, 1)) if kind == "max" else 1,
                                bool(node.attr("count_include_pad", 0)))
    task.__name__ = f"{kind}_pool"
    return task


max_pool = _window_pool("max")
avg_pool = _window_pool("avg")


def global_avg_pool(node, types, graph=None, cfg=None):
    return _cpu().pool_task("global_avg", types[0].shape, types[0].dtype)


def softmax(node, types, graph=None, cfg=None):
    return _cpu().softmax_task(int(np.prod(types[0].shape[:-1])), types[0].shape[-1])


def _epilogue(graph, node, cfg):
    from ..exec.lower import epilogue_of
    return epilogue_of(graph, node, graph.types[node.outputs[0]].shape[1], cfg)[0]


def accel_conv2d(node, types, graph, cfg):
    from ..exec.lower import conv_shape
    from ..tune.templates.accel import conv2d_task
    return conv2d_task(cfg, conv_shape(graph, node, cfg), _epilogue(graph, node, cfg))


def accel_dense(node, types, graph, cfg):
    """Packed operands: x [M', K', m, k], w [N', K', n, k]."""
    from ..tune.templates.accel import dense_task
    x, w = types[0].shape, types[1].shape
    return dense_task(cfg, x[0] * x[2], x[1] * x[3], w[0] * w[2], _epilogue(graph, node, cfg))


def accel_batch_dense(node, types, graph, cfg):
    """Packed operands: x [G, M', K', m, k], w [G, N', K', n, k]: G denses of one shape,
    so the task of one of them (the lowering looks its knobs up the same way)."""
    from ..exec.lower import epilogue_of
    from ..tune.templates.accel import dense_task
    x, w = types[0].shape, types[1].shape
    ep = epilogue_of(graph, node, graph.types[node.outputs[0]].shape[2], cfg)[0]
    return dense_task(cfg, x[1] * x[3], x[2] * x[4], w[1] * w[3], ep)
