"""Narrow input convolutions: fewer, fuller GEMM steps by moving kernel taps into channels.

A convolution whose input has fewer channels than the GEMM block (an image's 3) pads every
channel block to ``block_in`` and runs one GEMM step per kernel tap: ResNet's 7x7/2 stem
costs 49 steps per output entry with 13 of every 16 multipliers idle. Two rewrites give
the same products summed in another order (exact in int8, and in float on integers):

* **stride fold** (stride ``s`` >= 2): the conv runs stride 1 on its input folded
  space-to-depth,

      conv2d(x, W[O, C, k, k], stride s, pads (t, l, ..))
          ==  conv2d(stride_fold(x, s, (t, l)), W'[O, C*s*s, k', k'], stride 1, no pads),
      k' = ceil(k / s),  W'[o, (c*s + p)*s + q, a, b] = W[o, c, s*a + p, s*b + q] (0 past k)

  (the stem: ceil(12 / 16) * 4 * 4 = 16 steps);
* **patches** (im2col): every k x k window becomes the channels of one position, the conv
  a 1x1 over C*k*k channels, ``W.reshape(O, C*k*k, 1, 1)`` (the stem: ceil(147 / 16) = 10
  steps). The patched input is k*k / s*s times the input, and a 1x1 conv loads a new input
  entry per step, so the choice weighs GEMM steps against the DMA of those entries.

The cheaper of the two (GEMM steps times filter blocks, or the patched input's load when
that is longer) replaces the conv when it beats the conv as it is. ``stride_fold`` and
``patches`` (opdefs/data.py) rearrange the model's input on the CPU, where it starts anyway.
The pass runs on the float graph before quantisation, for ops whose definition says they
fold (``OpDef.stride_folds``), when their input is a graph input (a rearranged value
mid-network would leave the accelerator and come back).
"""
from __future__ import annotations

import numpy as np

from vtalab.runtime.layout import ceil_div

from ..ir import Graph, Node
from ..opdef import op_of
from .rewrite import PassContext, Rewriter


def _square_conv_of_input(graph: Graph, rw: Rewriter, node: Node):
    """(weights, stride) of a plain square-kernel, equal-stride conv of a graph input."""
    if not op_of(node).stride_folds or node.attr("groups", 1) != 1 or \
            tuple(node.attr("dilations", (1, 1))) != (1, 1) or \
            node.inputs[0] not in graph.inputs:
        return None
    w = rw.constant_value(node.inputs[1])
    x = graph.types[node.inputs[0]]
    sh, sw = node.attr("strides", (1, 1))
    if w is None or w.ndim != 4 or x.rank != 4 or x.dtype != "float32" or \
            sh != sw or w.shape[2] != w.shape[3]:
        return None
    return w, sh


def choose_rewrite(cfg, filters: int, channels: int, kernel: int, stride: int):
    """"fold", "patches" or None: the rewrite with the fewest estimated cycles per output
    position, if it beats the conv as it is."""
    blocks_out = ceil_div(filters, cfg.block_out)
    gemm = {None: ceil_div(channels, cfg.block_in) * kernel * kernel}
    if stride >= 2:
        gemm["fold"] = ceil_div(channels * stride * stride, cfg.block_in) * \
            ceil_div(kernel, stride) ** 2
    if kernel > 1:
        gemm["patches"] = ceil_div(channels * kernel * kernel, cfg.block_in)
    cycles = {way: steps * blocks_out for way, steps in gemm.items()}
    if "patches" in cycles:           # each step's input entry is loaded anew
        load = gemm["patches"] * cfg.entry_bytes("inp") / cfg.bus_bytes
        cycles["patches"] = max(cycles["patches"], load)
    best = min(cycles, key=lambda way: (cycles[way], way is not None))
    return best


def _keep_range(rw: Rewriter, x: str, value: str) -> None:
    ranges = rw.b.meta.get("activation_ranges")
    if ranges and x in ranges:             # QDQ ranges: the same values, zeros added
        rw.b.meta["activation_ranges"] = {**ranges, value: ranges[x]}


def _emit_conv(rw: Rewriter, node: Node, data: str, weights: np.ndarray) -> None:
    attrs = dict(node.attrs, strides=(1, 1), pads=(0, 0, 0, 0))
    inputs = [data, rw.const(np.ascontiguousarray(weights), hint=f"{node.name}_w")]
    inputs += [rw.value(v) for v in node.inputs[2:]]
    rw.emit_node(node.op, inputs, attrs, node.name, node.outputs)


def _fold(graph: Graph, rw: Rewriter, node: Node, w: np.ndarray, s: int) -> None:
    out, channels, k, _ = w.shape
    kf = ceil_div(k, s)
    top, left = node.attr("pads", (0, 0, 0, 0))[:2]
    ho, wo = graph.types[node.outputs[0]].shape[2:]
    x = node.inputs[0]
    folded = rw.op("stride_fold", rw.value(x), name=f"{node.name}_fold", block=s,
                   pads=(top, left), size=(ho + kf - 1, wo + kf - 1))
    _keep_range(rw, x, folded)
    padded = np.zeros((out, channels, kf * s, kf * s), w.dtype)
    padded[:, :, :k, :k] = w
    weights = padded.reshape(out, channels, kf, s, kf, s).transpose(0, 1, 3, 5, 2, 4)
    _emit_conv(rw, node, folded, weights.reshape(out, -1, kf, kf))


def _patches(graph: Graph, rw: Rewriter, node: Node, w: np.ndarray, s: int) -> None:
    out, _, k, _ = w.shape
    top, left = node.attr("pads", (0, 0, 0, 0))[:2]
    ho, wo = graph.types[node.outputs[0]].shape[2:]
    x = node.inputs[0]
    patched = rw.op("patches", rw.value(x), name=f"{node.name}_patches", kernel=k, stride=s,
                    pads=(top, left), size=(ho, wo))
    _keep_range(rw, x, patched)
    _emit_conv(rw, node, patched, w.reshape(out, -1, 1, 1))


REWRITES = {"fold": _fold, "patches": _patches}


def stride_fold(graph: Graph, ctx: PassContext) -> Graph:
    if not ctx.quantize:                   # the float graph runs on the CPU: no GEMM steps
        return graph
    rw = Rewriter(graph)
    for node in graph.nodes:
        conv = _square_conv_of_input(graph, rw, node)
        way = None
        if conv is not None:
            w, s = conv
            way = choose_rewrite(ctx.config, w.shape[0], w.shape[1], w.shape[2], s)
        if way is None:
            rw.keep(node)
        else:
            REWRITES[way](graph, rw, node, *conv)
    return rw.finish()
