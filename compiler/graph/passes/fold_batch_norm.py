"""Batch-norm folding into convolutions, and bias-add folding into conv/dense.

    conv2d(x, W, b) -> batch_norm(g, beta, mean, var)
        ==  conv2d(x, W * g/sqrt(var+eps), (b - mean) * g/sqrt(var+eps) + beta)

What folds into which op is the op table's `folds` (opdef.py FOLDS): conv2d takes batch
norms ("affine"), conv2d and dense take bias adds ("bias"), along their weights' output
axis. A batch norm not fed by a foldable op becomes mul + add with constant operands.
An `add` of a per-channel constant after such an op becomes that node's bias, also across
a reshape that keeps the op's channel axis last (what MatMul [..., K] x [K, N] + bias
imports as: reshape -> dense -> reshape -> add), so the bias joins the int8 GEMM's
epilogue."""
from __future__ import annotations

import numpy as np

from ..ir import Graph, Node
from ..opdef import is_addition, op_of
from .rewrite import PassContext, Rewriter, single_consumer


def _bn_params(rw: Rewriter, node: Node):
    values = [rw.constant_value(v) for v in node.inputs[1:]]
    if any(v is None for v in values):
        return None
    gamma, beta, mean, var = (v.astype(np.float64) for v in values)
    scale = gamma / np.sqrt(var + node.attr("epsilon", 1e-5))
    return scale, beta - mean * scale


def _folding_target(graph: Graph, rw: Rewriter, node: Node):
    """The batch_norm / bias add consuming a float op that folds (conv2d, dense) with
    constant weights."""
    if not op_of(node).folds or graph.types[node.outputs[0]].dtype != "float32":
        return None
    if rw.constant_value(node.inputs[1]) is None:
        return None
    if len(node.inputs) > 2 and node.inputs[2] and rw.constant_value(node.inputs[2]) is None:
        return None
    return single_consumer(graph, node.outputs[0])


def _bias_of(graph: Graph, rw: Rewriter, add: Node, value: str, channels: int, rank: int):
    if not is_addition(add):
        return None
    other = add.inputs[1] if add.inputs[0] == value else add.inputs[0]
    array = rw.constant_value(other)
    if array is None or array.size != channels:
        return None
    aligned = (1,) * (rank - array.ndim) + array.shape
    if array.ndim > rank or aligned[1] != channels or \
            any(d != 1 for i, d in enumerate(aligned) if i != 1) or \
            graph.types[add.outputs[0]] != graph.types[value]:
        return None
    return array.reshape(-1).astype(np.float64)


def _bias_after_reshape(graph: Graph, rw: Rewriter, dense: Node, reshape: Node):
    """(add node, bias) where `dense`'s channel axis (1) is its output's last, `reshape`
    keeps that axis and a constant of that axis' size is added to it (broadcast over the
    other axes only)."""
    dense_out = graph.types[dense.outputs[0]]
    n = dense_out.shape[-1]
    out = graph.types[reshape.outputs[0]]
    add = single_consumer(graph, reshape.outputs[0])
    if dense_out.rank != 2 or reshape.op != "reshape" or out.shape[-1] != n or \
            add is None or not is_addition(add):
        return None
    other = add.inputs[1] if add.inputs[0] == reshape.outputs[0] else add.inputs[0]
    array = rw.constant_value(other)
    if array is None or array.size != n or array.ndim > out.rank or \
            array.shape[-1] != n or graph.types[add.outputs[0]] != out:
        return None
    return add, array.reshape(-1).astype(np.float64)


def _fold_bias_after_reshape(graph: Graph, rw: Rewriter, dense: Node, reshape: Node):
    """dense(x, w, b) -> reshape -> add(bias) == dense(x, w, b + bias) -> reshape; returns
    the add node (now dropped) or None."""
    found = _bias_after_reshape(graph, rw, dense, reshape)
    if found is None:
        return None
    add, bias = found
    w = rw.constant_value(dense.inputs[1])
    b = rw.constant_value(dense.inputs[2]).astype(np.float64) \
        if len(dense.inputs) > 2 and dense.inputs[2] else np.zeros(w.shape[0])
    bc = rw.const((b + bias).astype(np.float32), hint=f"{dense.name}_b")
    rw.emit_node(dense.op, [rw.value(dense.inputs[0]), rw.value(dense.inputs[1]), bc],
                 dict(dense.attrs), dense.name, dense.outputs)
    rw.alias(add.outputs[0], reshape.outputs[0])
    ranges = rw.b.meta.get("activation_ranges")
    if ranges:   # QDQ ranges: the reshape's value is now the add's
        moved = {k: v for k, v in ranges.items() if k not in (dense.outputs[0],
                                                               reshape.outputs[0])}
        if add.outputs[0] in ranges:
            moved[reshape.outputs[0]] = ranges[add.outputs[0]]
        rw.b.meta["activation_ranges"] = moved
    return add


def fold_batch_norm(graph: Graph, ctx: PassContext) -> Graph:
    rw = Rewriter(graph)
    skip = set()
    for node in graph.nodes:
        if node.name in skip:
            continue
        user = _folding_target(graph, rw, node)
        if user is not None and user.op == "reshape":
            add = _fold_bias_after_reshape(graph, rw, node, user)
            if add is not None:
                skip.add(add.name)
                continue
        if user is not None:
            w = rw.constant_value(node.inputs[1]).astype(np.float64)
            b = rw.constant_value(node.inputs[2]).astype(np.float64) \
                if len(node.inputs) > 2 and node.inputs[2] else np.zeros(w.shape[0])
            out_rank = graph.types[node.outputs[0]].rank
            folded = None
            if user.op == "batch_norm" and op_of(node).folds == "affine":
                params = _bn_params(rw, user)
                if params is not None:
                    scale, shift = params
                    rows = scale.reshape((-1,) + (1,) * (w.ndim - 1))
                    folded = (w * rows, b * scale + shift)
            else:
                bias = _bias_of(graph, rw, user, node.outputs[0], w.shape[0], out_rank)
                if bias is not None:
                    folded = (w, b + bias)
            if folded is not None:
                _carry_range(rw, node.outputs[0], user.outputs[0], folded[1] - b, w, folded[0])
                wc = rw.const(folded[0].astype(np.float32), hint=f"{node.name}_w")
                bc = rw.const(folded[1].astype(np.float32), hint=f"{node.name}_b")
                rw.emit_node(node.op, [rw.value(node.inputs[0]), wc, bc], dict(node.attrs),
                             node.name, user.outputs)
                skip.add(user.name)
                continue
        if node.op == "batch_norm" and _bn_params(rw, node) is not None:
            _as_affine(rw, node, graph.types[node.inputs[0]].rank)
            continue
        rw.keep(node)
    return rw.finish()


def _carry_range(rw: Rewriter, before: str, after: str, shift, w_old, w_new) -> None:
    """A QDQ range known for the conv output also bounds the folded output:
    |y| <= max_c(|scale_c| * range + |shift_c|)."""
    ranges = rw.b.meta.get("activation_ranges")
    if not ranges or before not in ranges or after in ranges:
        return
    norm_old = np.abs(w_old.reshape(w_old.shape[0], -1)).sum(axis=1)
    norm_new = np.abs(w_new.reshape(w_new.shape[0], -1)).sum(axis=1)
    scale = np.divide(norm_new, norm_old, out=np.zeros_like(norm_new), where=norm_old > 0)
    bound = float(np.max(scale * ranges[before] + np.abs(shift)))
    rw.b.meta["activation_ranges"] = {**ranges, after: bound}


def _as_affine(rw: Rewriter, node: Node, rank: int) -> None:
    scale, shift = _bn_params(rw, node)
    shape = (1, -1) + (1,) * (rank - 2)
    s = rw.const(scale.reshape(shape).astype(np.float32), hint=f"{node.name}_scale")
    t = rw.const(shift.reshape(shape).astype(np.float32), hint=f"{node.name}_shift")
    y = rw.op("mul", rw.value(node.inputs[0]), s, name=f"{node.name}_mul")
    rw.emit_node("add", [y, t], {}, node.name, node.outputs)
