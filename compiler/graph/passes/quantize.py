"""int8 quantisation with power-of-two scales (what the accelerator's ALU can requantise).

Every quantised tensor is symmetric int8 with scale 2**-e ("exponent" e). A float group

    conv2d|dense (constant weights) [-> add(residual)] [-> relu | clip]

becomes integer ops the accelerator runs in its accumulator:

    acc = conv2d(x_q, w_q)                    int8 x int8 -> int32, exponent ex + ew
    acc = add(acc, bias_q)                    bias at exponent ex + ew, plus 2**(shift-1)
                                              for round-half-up of the shift below
    acc = add(acc, shr(cast(r_q, int32), -k)) residual moved to the acc exponent (k = left shift)
    acc = shr(acc, shift)                     arithmetic shift, shift = ex + ew - ey
    acc = clip(acc, lo, hi)                   relu / relu6 / int8 saturation in one clip
    y_q = cast(acc, int8)

Shift amounts are exact for any size (x >> a >> b == x >> (a + b)); the lowering splits
amounts beyond the ALU's signed 5-bit field into several SHR instructions. With per-channel
weights `ew`, `shift` and `k` are per-output-channel arrays shaped [1, C, 1, 1] / [1, C].
A MatMul of two computed operands anchors a group too: its int8 form is a batch_dense with
both operands quantised (quantize_matmul.py). Ops whose quantisation rule (the op table, opdef.py) is "int8" (max_pool, flatten, reshape,
transpose, pad, slice, ...) or "clip" (relu, clip) of an int8 value stay int8 (exact); all
other ops run in float32 between `dequantize` / `quantize` nodes (ONNX semantics); the
passes after this one make such float islands exact integer ops where they can
(alu_islands.py, tabulate.py).

Ranges come from a calibration set (`ctx.calibration`) and/or the QDQ scales that
`strip_qdq` left in `graph.meta["activation_ranges"]` (those win)."""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..errors import QuantizeError
from ..ir import Graph, Node
from ..opdef import is_addition, op_of
from .calibrate import ValueStats, best_exponent, calibrate, exponent_for
from .quantize_matmul import batchable, emit_matmul_group
from .rewrite import PassContext, Rewriter, single_consumer

_ANCHOR_ATTRS = ("strides", "pads", "dilations", "groups")


def _rule(node: Node) -> str:
    return op_of(node).quant


@dataclass
class Group:
    anchor: Node
    residual_add: Node | None = None
    residual: str | None = None
    activations: list[Node] = field(default_factory=list)

    @property
    def last(self) -> Node:
        return (self.activations or [None])[-1] or self.residual_add or self.anchor

    @property
    def out(self) -> str:
        return self.last.outputs[0]

    @property
    def members(self) -> list[Node]:
        return [n for n in (self.anchor, self.residual_add) if n is not None] + self.activations


def match_group(graph: Graph, anchor: Node, taken=frozenset()) -> Group | None:
    """The quantisable group rooted at a float conv2d/dense with constant weights, or at
    an op whose int8 form takes computed weights (`int8_op`: a MatMul of two computed
    operands, quantize_matmul.py)."""
    computed = bool(op_of(anchor).int8_op)
    if _rule(anchor) != "gemm" or graph.types[anchor.outputs[0]].dtype != "float32":
        return None
    if computed and not batchable(graph, anchor) or not computed and (
            not graph.is_constant(anchor.inputs[1]) or
            (len(anchor.inputs) > 2 and anchor.inputs[2] and
             not graph.is_constant(anchor.inputs[2]))):
        return None
    group = Group(anchor)
    user = single_consumer(graph, anchor.outputs[0])
    out = anchor.outputs[0]
    # a residual add becomes the add step of the GEMM's epilogue (opdef.EPILOGUE_STEPS)
    if user is not None and is_addition(user) and user.name not in taken and not computed:
        other = user.inputs[1] if user.inputs[0] == out else user.inputs[0]
        if not graph.is_constant(other) and other != out and \
                graph.types[other] == graph.types[out] == graph.types[user.outputs[0]]:
            group.residual_add, group.residual = user, other
            out = user.outputs[0]
            user = single_consumer(graph, out)
    while user is not None and _rule(user) == "clip" and user.name not in taken:
        group.activations.append(user)  # relu followed by a clip: one clip
        user = single_consumer(graph, user.outputs[0])
    return group


def _clip_bounds(nodes, exponent: int) -> tuple[int, int]:
    """int8 bounds of a chain of relu / clip nodes at the given exponent (intersected)."""
    qlo, qhi = -128, 127
    for node in nodes:
        lo, hi = op_of(node).clip_bounds(node)
        if lo is not None:
            qlo = max(qlo, int(np.clip(np.ceil(lo * 2.0 ** exponent), -128, 127)))
        if hi is not None:
            qhi = min(qhi, int(np.clip(np.floor(hi * 2.0 ** exponent), -128, 127)))
    return qlo, qhi


def quantize_weights(w: np.ndarray, per_channel: bool):
    """(int8 weights, exponent) with exponent an int or an int array over axis 0."""
    rows = np.abs(w.reshape(w.shape[0], -1)).astype(np.float64)
    if not per_channel:
        e = best_exponent(rows, float(rows.max()))
    else:
        fallback = exponent_for(float(rows.max()))
        e = np.array([best_exponent(r, float(r.max())) if r.max() > 0 else fallback
                      for r in rows])
    scale = 2.0 ** (np.asarray(e, np.float64).reshape((-1,) + (1,) * (w.ndim - 1))
                    if per_channel else e)
    q = np.clip(np.rint(w.astype(np.float64) * scale), -128, 127).astype(np.int8)
    return q, e


class Quantizer:
    def __init__(self, graph: Graph, ctx: PassContext, ranges: dict[str, float]):
        self.graph, self.ctx, self.ranges = graph, ctx, ranges
        self.rw = Rewriter(graph)
        self.fval = {v: v for v in (*graph.inputs, *graph.constants)}
        self.qval: dict[str, tuple[str, int]] = {}
        self.exponents: dict[str, int] = {}

    # ---- value forms ----------------------------------------------------------------
    def exponent(self, *candidates: str) -> int:
        for value in candidates:
            found = self.ranges.get(value)
            if found is not None:
                return found.exponent() if isinstance(found, ValueStats) else \
                    exponent_for(found)
        raise QuantizeError(f"activation range of value {candidates[0]!r} must come from a "
                            f"calibration set or the model's QDQ scales, not missing")

    def has_ranges(self, group: Group) -> bool:
        known = lambda v: v in self.qval or v in self.ranges
        return known(group.anchor.inputs[0]) and known(group.out) and \
            (group.residual is None or known(group.residual)) and \
            (not op_of(group.anchor).int8_op or known(group.anchor.inputs[1]))

    def as_int8(self, value: str) -> tuple[str, int]:
        if value not in self.qval:
            e = self.exponent(value)
            q = self.rw.op("quantize", self.as_float(value), name=f"{value}_quant",
                           scale=np.float32(2.0 ** -e), zero_point=np.int8(0), axis=1,
                           dtype="int8")
            self.set_int8(value, q, e)
        return self.qval[value]

    def as_float(self, value: str) -> str:
        if value not in self.fval:
            q, e = self.qval[value]
            self.fval[value] = self.rw.emit_node(
                "dequantize", [q], dict(scale=np.float32(2.0 ** -e), zero_point=np.int8(0),
                                        axis=1), f"{value}_dequant", [value])[0]
        return self.fval[value]

    def set_int8(self, value: str, q: str, e: int) -> None:
        self.qval[value] = (q, e)
        self.exponents[q] = e

    # ---- nodes ----------------------------------------------------------------------
    def run(self) -> Graph:
        deferred: dict[str, Group] = {}
        inside = set()
        for node in self.graph.nodes:
            group = match_group(self.graph, node, inside) if node.name not in inside else None
            if group is not None:
                inside.update(n.name for n in group.members)
                deferred[group.last.name] = group
            if node.name in deferred:
                group = deferred.pop(node.name)
                if self.has_ranges(group):
                    self.emit_group(group)
                else:  # a QDQ/QOperator model left this group in float: so do we
                    for member in group.members:
                        self.emit_other(member)
            elif node.name not in inside:
                self.emit_other(node)
        for value in self.graph.outputs:
            self.rw.alias(value, self.as_float(value))
        return self.rw.finish(quant_exponents=self.exponents)

    def emit_other(self, node: Node) -> None:
        first = node.inputs[0] if node.inputs else None
        if _rule(node) in ("int8", "clip") and first in self.qval and \
                first not in self.fval and (node.op != "pad" or node.attr("value", 0) == 0):
            q, e = self.qval[first]
            attrs = dict(node.attrs)
            op = node.op
            if _rule(node) == "clip":
                op = "clip"
                attrs = dict(zip(("lo", "hi"), _clip_bounds([node], e)))
            if op == "pad":
                attrs["value"] = 0
            rest = [self.as_float(v) if v else "" for v in node.inputs[1:]]
            out = self.rw.op(op, q, *rest, name=node.name, **attrs)
            self.set_int8(node.outputs[0], out, e)
            return
        inputs = [self.as_float(v) if v else "" for v in node.inputs]
        outs = self.rw.emit_node(node.op, inputs, dict(node.attrs), node.name, node.outputs)
        for old, new in zip(node.outputs, outs):
            self.fval[old] = new

    def emit_group(self, group: Group) -> None:
        if op_of(group.anchor).int8_op:
            emit_matmul_group(self, group, _clip_bounds)
            return
        rw, anchor = self.rw, group.anchor
        rank = self.graph.types[anchor.outputs[0]].rank
        cshape = (1, -1) + (1,) * (rank - 2)
        xq, ex = self.as_int8(anchor.inputs[0])
        w = self.graph.constants[anchor.inputs[1]]
        wq, ew = quantize_weights(w, self.ctx.per_channel)
        ea = ex + np.asarray(ew)
        eo = self.exponent(group.out)
        attrs = {k: anchor.attrs[k] for k in _ANCHOR_ATTRS if k in anchor.attrs}
        acc = rw.op(anchor.op, xq, rw.const(wq, f"{anchor.name}_wq"), name=anchor.name, **attrs)
        shift = ea - eo
        bias = np.where(shift > 0, 2.0 ** (np.maximum(shift, 1) - 1), 0.0)
        if len(anchor.inputs) > 2 and anchor.inputs[2]:
            b = self.graph.constants[anchor.inputs[2]].astype(np.float64)
            bias = bias + np.rint(b * 2.0 ** ea)
        bias = np.broadcast_to(bias, (w.shape[0],))
        if np.abs(bias).max() >= 2 ** 31:
            raise QuantizeError(f"bias of {anchor.name!r} must fit int32 at exponent {ea}, "
                                f"not reach {np.abs(bias).max():.3g}")
        if bias.any():
            acc = rw.op("add", acc, rw.const(bias.astype(np.int32).reshape(cshape),
                                             f"{anchor.name}_bq"), name=f"{anchor.name}_bias")
        if group.residual is not None:
            rq, er = self.as_int8(group.residual)
            r32 = rw.op("cast", rq, name=f"{group.residual_add.name}_load", dtype="int32")
            left = ea - er
            if np.any(left != 0):
                r32 = rw.op("shr", r32, name=f"{group.residual_add.name}_align",
                            amount=_amount(-left, cshape))
            acc = rw.op("add", acc, r32, name=group.residual_add.name)
        if np.any(shift != 0):
            acc = rw.op("shr", acc, name=f"{anchor.name}_shift", amount=_amount(shift, cshape))
        lo, hi = _clip_bounds(group.activations, eo)
        acc = rw.op("clip", acc, name=f"{group.last.name}_clip", lo=lo, hi=hi)
        out = rw.op("cast", acc, name=f"{group.out}_q", dtype="int8")
        self.set_int8(group.out, out, eo)


def _amount(value, cshape):
    value = np.asarray(value)
    return int(value) if value.ndim == 0 else value.astype(np.int32).reshape(cshape)


def propagate_ranges(graph: Graph, ranges: dict) -> dict:
    """Fill missing ranges across ops that keep a tensor's range (the op table's
    `keeps_range`: max_pool, reshapes): a QOperator model quantises the max_pool output, not
    the ReLU before it. Forward also across relu / clip (an output never exceeds them)."""
    ranges = dict(ranges)
    keeps = {n.name: op_of(n).keeps_range for n in graph.nodes}
    for node in graph.nodes:  # forward: an output never exceeds these ops' input
        if (keeps[node.name] or _rule(node) == "clip") and node.inputs and \
                node.inputs[0] in ranges:
            ranges.setdefault(node.outputs[0], ranges[node.inputs[0]])
    for node in reversed(graph.nodes):
        if keeps[node.name] and node.outputs[0] in ranges:
            ranges.setdefault(node.inputs[0], ranges[node.outputs[0]])
    return ranges


def quantize(graph: Graph, ctx: PassContext) -> Graph:
    """The quantisation pass (a no-op when `ctx.quantize` is False)."""
    if not ctx.quantize:
        return graph
    ranges: dict[str, object] = {}
    qdq = dict(graph.meta.get("activation_ranges", {}))
    if ctx.calibration is not None or not qdq:
        ranges.update(calibrate(graph, ctx.calibration))
    ranges.update(qdq)
    return Quantizer(graph, ctx, propagate_ranges(graph, ranges)).run()
