"""Narrow strided input convolutions run stride 1 on their input folded space-to-depth.

A convolution whose input has fewer channels than the GEMM block (an image's 3) pads every
channel block to ``block_in`` and runs one GEMM step per kernel tap: ResNet's 7x7/2 stem
costs 49 steps per output row with 13 of every 16 multipliers idle. With stride ``s``,

    conv2d(x, W[O, C, k, k], stride s, pads (t, l, ..))
        ==  conv2d(stride_fold(x, s, (t, l)), W'[O, C*s*s, k', k'], stride 1, no pads),
    k' = ceil(k / s),  W'[o, (c*s + p)*s + q, a, b] = W[o, c, s*a + p, s*b + q] (0 past k),

the same products summed in another order (the taps past ``k`` multiply zeros): the stem
runs ceil(12 / 16) * 4 * 4 = 16 steps per output row instead of 49, on the accelerator's
square-kernel conv template. ``stride_fold`` (opdefs/data.py) folds the model's input on
the CPU, where it starts anyway (int8 and exact). The pass runs on the float graph before
quantisation, for ops whose definition says they fold (``OpDef.stride_folds``), when
their input is a graph input (a folded value mid-network would leave the accelerator and
come back) and the fold saves GEMM steps.
"""
from __future__ import annotations

import numpy as np

from vtalab.runtime.layout import ceil_div

from ..ir import Graph, Node
from ..opdef import op_of
from .rewrite import PassContext, Rewriter


def _foldable(graph: Graph, rw: Rewriter, node: Node, block_in: int) -> bool:
    if not op_of(node).stride_folds or node.attr("groups", 1) != 1 or \
            tuple(node.attr("dilations", (1, 1))) != (1, 1) or \
            node.inputs[0] not in graph.inputs:
        return False
    w = rw.constant_value(node.inputs[1])
    x = graph.types[node.inputs[0]]
    sh, sw = node.attr("strides", (1, 1))
    if w is None or w.ndim != 4 or x.rank != 4 or x.dtype != "float32" or \
            sh != sw or sh < 2 or w.shape[2] != w.shape[3]:
        return False
    channels, k, s = w.shape[1], w.shape[2], sh
    folded = ceil_div(channels * s * s, block_in) * ceil_div(k, s) ** 2
    return folded < ceil_div(channels, block_in) * k * k


def _fold(graph: Graph, rw: Rewriter, node: Node) -> None:
    w = rw.constant_value(node.inputs[1])
    out, channels, k, _ = w.shape
    s = node.attr("strides")[0]
    kf = ceil_div(k, s)
    top, left = node.attr("pads", (0, 0, 0, 0))[:2]
    ho, wo = graph.types[node.outputs[0]].shape[2:]
    x = node.inputs[0]
    folded = rw.op("stride_fold", rw.value(x), name=f"{node.name}_fold", block=s,
                   pads=(top, left), size=(ho + kf - 1, wo + kf - 1))
    ranges = rw.b.meta.get("activation_ranges")
    if ranges and x in ranges:             # QDQ ranges: the same values, zeros added
        rw.b.meta["activation_ranges"] = {**ranges, folded: ranges[x]}
    padded = np.zeros((out, channels, kf * s, kf * s), w.dtype)
    padded[:, :, :k, :k] = w
    weights = padded.reshape(out, channels, kf, s, kf, s).transpose(0, 1, 3, 5, 2, 4)
    attrs = dict(node.attrs, strides=(1, 1), pads=(0, 0, 0, 0))
    inputs = [folded, rw.const(np.ascontiguousarray(weights.reshape(out, -1, kf, kf)),
                               hint=f"{node.name}_w")]
    inputs += [rw.value(v) for v in node.inputs[2:]]
    rw.emit_node(node.op, inputs, attrs, node.name, node.outputs)


def stride_fold(graph: Graph, ctx: PassContext) -> Graph:
    if not ctx.quantize:                   # the float graph runs on the CPU: no GEMM steps
        return graph
    rw = Rewriter(graph)
    block_in = ctx.config.block_in
    for node in graph.nodes:
        if _foldable(graph, rw, node, block_in):
            _fold(graph, rw, node)
        else:
            rw.keep(node)
    return rw.finish()
