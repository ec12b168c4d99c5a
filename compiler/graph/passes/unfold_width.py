"""Narrow convolutions: kernel columns moved into the input channels.

A convolution whose input has fewer channels than the GEMM block (an image's 3) pads every
channel block to ``block_in`` and runs one GEMM step per kernel tap: ResNet's 7x7 stem
costs 49 steps per output row, 13 of every 16 multipliers idle. Unfolded,

    conv2d(x, W[O, C, KH, KW], stride (SH, SW), pads (T, L, B, R))
        ==  conv2d(unfold_width(x, KW, SW, (L, R)), W'[O, KW*C, KH, 1], stride (SH, 1),
                   pads (T, 0, B, 0)),    W'[o, j*C + c, kh, 0] = W[o, c, kh, j],

the same products summed in another order: ceil(KW*C / block_in) * KH steps (the stem: 14).
``unfold_width`` (opdefs/data.py) copies each output column's window of the input on the
CPU, int8 and exact; the pass runs on the float graph, before quantisation, for every op
whose definition says it can (``OpDef.unfolds_width``) and only where it saves GEMM steps.
"""
from __future__ import annotations

import numpy as np

from ..ir import Graph, Node
from ..opdef import op_of
from .rewrite import PassContext, Rewriter


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def _unfoldable(graph: Graph, rw: Rewriter, node: Node, block_in: int) -> bool:
    if not op_of(node).unfolds_width or node.attr("groups", 1) != 1 or \
            tuple(node.attr("dilations", (1, 1))) != (1, 1):
        return False
    w = rw.constant_value(node.inputs[1])
    x = graph.types[node.inputs[0]]
    if w is None or w.ndim != 4 or x.rank != 4 or x.dtype != "float32":
        return False
    channels, kw = w.shape[1], w.shape[3]
    return kw > 1 and _ceil_div(channels, block_in) * kw > _ceil_div(channels * kw, block_in)


def _unfold(graph: Graph, rw: Rewriter, node: Node) -> None:
    w = rw.constant_value(node.inputs[1])
    out, channels, kh, kw = w.shape
    top, left, bottom, right = node.attr("pads", (0, 0, 0, 0))
    sh, sw = node.attr("strides", (1, 1))
    x = node.inputs[0]
    unfolded = rw.op("unfold_width", rw.value(x), name=f"{node.name}_unfold", kernel=kw,
                     stride=sw, pads=(left, right))
    ranges = rw.b.meta.get("activation_ranges")
    if ranges and x in ranges:             # QDQ ranges: the same values, zeros added
        rw.b.meta["activation_ranges"] = {**ranges, unfolded: ranges[x]}
    weights = w.transpose(0, 3, 1, 2).reshape(out, kw * channels, kh, 1)
    attrs = dict(node.attrs, strides=(sh, 1), pads=(top, 0, bottom, 0))
    inputs = [unfolded, rw.const(np.ascontiguousarray(weights), hint=f"{node.name}_w")]
    inputs += [rw.value(v) for v in node.inputs[2:]]
    rw.emit_node(node.op, inputs, attrs, node.name, node.outputs)


def unfold_width(graph: Graph, ctx: PassContext) -> Graph:
    if not ctx.quantize:                   # the float graph runs on the CPU: no GEMM steps
        return graph
    rw = Rewriter(graph)
    block_in = ctx.config.block_in
    for node in graph.nodes:
        if _unfoldable(graph, rw, node, block_in):
            _unfold(graph, rw, node)
        else:
            rw.keep(node)
    return rw.finish()
