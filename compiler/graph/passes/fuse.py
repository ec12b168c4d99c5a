"""Fusion: an int8 GEMM and its requantisation epilogue become one operator.

    conv2d|dense -> add(bias) -> add(shr(cast(residual))) -> shr(shift) -> clip -> cast(int8)
        ==  accel_conv2d|accel_dense(x, w, bias, residual;
                                     residual_shr, shift, lo, hi, out_dtype)

Every epilogue step is optional but the order is fixed (it is the order the accelerator's
ALU applies them in the accumulator). The chain stops at the first node that is not the
next step, runs on another target, or whose input has other readers. The op table says
which ops anchor a fusion (`gemm`) and which step each epilogue op performs (`epilogue`).
On the accelerator the fused op is the anchor's `Gemm.accel_op` (`accel_conv2d` /
`accel_dense`, packed layout); on the CPU fallback the same chain becomes its `cpu_op`
(`qconv2d` / `qdense`, plain layout, e.g. depthwise convolutions): one integer kernel
instead of five elementwise passes."""
from __future__ import annotations

from dataclasses import dataclass, field

from ..ir import Graph, Node
from ..opdef import op_of
from .rewrite import PassContext, Rewriter, single_consumer

_STEPS = ("bias", "residual", "shift", "clip", "cast")
#: epilogue step (opdef.EPILOGUE_STEPS) -> (its index in _STEPS, the fused attributes)
_STEP_ATTRS = {
    "shift": (2, lambda n: {"shift": n.attr("amount")}),
    "clip": (3, lambda n: {"lo": n.attr("lo"), "hi": n.attr("hi")}),
    "cast": (4, lambda n: {"out_dtype": n.attr("dtype")}),
}
_ANCHOR_ATTRS = ("strides", "pads", "dilations", "groups", "layout")


@dataclass
class Fusion:
    anchor: Node
    members: list[Node] = field(default_factory=list)   # epilogue nodes, in order
    loads: list[Node] = field(default_factory=list)     # residual cast/shr nodes
    bias: str = ""
    residual: str = ""
    attrs: dict = field(default_factory=dict)

    @property
    def last(self) -> Node:
        return self.members[-1] if self.members else self.anchor


def _residual_source(graph: Graph, value: str, fusion: Fusion) -> bool:
    """Follow shr(cast(int8)) / cast(int8) back to the int8 residual."""
    node = graph.producer(value)
    loads = []
    target = fusion.anchor.attr("target")
    if node is not None and op_of(node).epilogue == "shift" and node.attr("target") == target \
            and single_consumer(graph, value) is not None:
        fusion.attrs["residual_shr"] = node.attr("amount")
        loads.append(node)
        value, node = node.inputs[0], graph.producer(node.inputs[0])
    if node is None or op_of(node).epilogue != "cast" or node.attr("target") != target or \
            graph.types[node.inputs[0]].dtype != "int8" or \
            single_consumer(graph, value) is None:
        fusion.attrs.pop("residual_shr", None)
        return False
    fusion.loads = loads + [node]
    fusion.residual = node.inputs[0]
    return True


def _next_step(graph: Graph, node: Node, acc: str, fusion: Fusion, done: int) -> int | None:
    """Index in _STEPS of the step `node` performs, if it may follow step `done`."""
    if node.attr("target") != fusion.anchor.attr("target"):
        return None
    step = op_of(node).epilogue
    if step == "add":
        other = node.inputs[1] if node.inputs[0] == acc else node.inputs[0]
        if graph.is_constant(other) and done < 0:
            fusion.bias = other
            return 0
        if not graph.is_constant(other) and done < 1 and _residual_source(graph, other, fusion):
            return 1
        return None
    if step not in _STEP_ATTRS or _STEP_ATTRS[step][0] <= done:
        return None
    index, attrs = _STEP_ATTRS[step]
    fusion.attrs.update(attrs(node))
    return index


def find_fusion(graph: Graph, anchor: Node) -> Fusion:
    fusion = Fusion(anchor, attrs={k: anchor.attrs[k] for k in _ANCHOR_ATTRS
                                   if k in anchor.attrs})
    fusion.attrs["out_dtype"] = "int32"
    acc, done = anchor.outputs[0], -1
    while (user := single_consumer(graph, acc)) is not None:
        step = _next_step(graph, user, acc, fusion, done)
        if step is None:
            break
        fusion.members.append(user)
        acc, done = user.outputs[0], step
        if step == 4:
            break
    return fusion


def fuse(graph: Graph, ctx: PassContext) -> Graph:
    fusions = {}
    consumed = set()
    for node in graph.nodes:
        if op_of(node).gemm is not None and graph.types[node.inputs[0]].dtype == "int8":
            fusion = find_fusion(graph, node)
            if not fusion.members:
                continue
            fusions[fusion.last.name] = fusion
            consumed.update(n.name for n in (node, *fusion.members, *fusion.loads))
    rw = Rewriter(graph)
    for node in graph.nodes:
        if node.name in fusions:
            f = fusions[node.name]
            inputs = [rw.value(v) for v in (*f.anchor.inputs[:2], f.bias, f.residual)]
            inputs = [v if v else "" for v in inputs]
            while inputs[-1] == "":
                inputs.pop()
            target = f.anchor.attr("target", "cpu")
            attrs = dict(f.attrs, target=target,
                         fused=tuple(n.name for n in (f.anchor, *f.loads, *f.members)))
            gemm = op_of(f.anchor).gemm
            op = gemm.accel_op if target == "accel" else gemm.cpu_op
            rw.emit_node(op, inputs, attrs, f.anchor.name, f.last.outputs)
        elif node.name not in consumed:
            rw.keep(node)
    return rw.finish()
