"""Automatic partitioning: which nodes run on the accelerator, which on the CPU fallback.

Accelerator-eligible (VTA's GEMM core + ALU), as the op table (opdef.py) declares:
- an int8 GEMM (an op with `gemm`: conv2d, dense) with constant weights that its
  `Gemm.refuse` accepts (conv2d: groups = 1, no dilation); channels are zero-padded to the
  block by the layout pass, so any channel count fits;
- the requantisation epilogue of such a GEMM while its value stays in the accumulator
  (single consumer): the ops with an `epilogue` step (bias or residual add, arithmetic
  shift, clip, narrowing cast) and the cast / shift that load and align a residual;
- int8 elementwise ops of quant rule "alu" (passes/alu_islands.py) where block_in ==
  block_out.
Everything else runs on the CPU. Each node gets `attrs["target"]` ("accel" / "cpu") and
`graph.meta["partition"]` lists a `Placement` with the reason for every node."""
from __future__ import annotations

from dataclasses import dataclass

from vtalab.runtime.layout import round_up

from ..ir import Graph, Node
from ..opdef import op_of
from .rewrite import PassContext, single_consumer

#: how the partition report names each epilogue step
STEP_ROLES = {"shift": "arithmetic shift", "clip": "clip"}


@dataclass(frozen=True)
class Placement:
    node: str
    op: str
    target: str
    reason: str


def _gemm_reason(graph: Graph, node: Node, ctx: PassContext) -> tuple[str, str]:
    x, w, gemm = graph.types[node.inputs[0]], graph.types[node.inputs[1]], op_of(node).gemm
    if x.dtype != "int8":
        return "cpu", f"{x.dtype} {node.op}: not quantised to int8"
    if not graph.is_constant(node.inputs[1]) and not gemm.computed_weights:
        return "cpu", f"{node.op} weights are computed, not constant"
    refusal = gemm.refusal(node)
    if refusal is not None:
        return "cpu", refusal
    if gemm.batched:   # [G, M, K] x [G, N, K]: the weights loaded from DRAM per batch
        (g, m, k), n = x.shape, w.shape[1]
        return "accel", (f"int8 {node.op} {g} x ({m}x{k} @ {k}x{n}), both operands "
                         f"computed{_padding(k, n, ctx.config)}")
    cin, cout = x.shape[1], w.shape[0]
    return "accel", f"int8 {node.op} {cin}->{cout} channels{_padding(cin, cout, ctx.config)}"


def _padding(cin: int, cout: int, cfg) -> str:
    padded = (round_up(cin, cfg.block_in), round_up(cout, cfg.block_out))
    return "" if padded == (cin, cout) else f" (padded {padded[0]}->{padded[1]})"


def _other_operand(node: Node, acc: str) -> str:
    return node.inputs[1] if node.inputs[0] == acc else node.inputs[0]


def _epilogue_role(graph: Graph, node: Node, acc: str) -> str:
    step = op_of(node).epilogue
    if step == "add":
        return "bias add" if graph.is_constant(_other_operand(node, acc)) else "residual add"
    if step == "cast":
        return f"narrow to {node.attr('dtype')}"
    return STEP_ROLES[step]


def _residual_chain(graph: Graph, value: str) -> list[Node]:
    """The cast [-> shift] nodes that load an int8 residual into the accumulator."""
    chain = []
    node = graph.producer(value)
    while node is not None and single_consumer(graph, node.outputs[0]) is not None:
        if op_of(node).epilogue == "shift":
            chain.append(node)
            node = graph.producer(node.inputs[0])
        elif op_of(node).epilogue == "cast" and graph.types[node.inputs[0]].dtype == "int8":
            chain.append(node)
            return chain
        else:
            break
    return []


def _alu_reason(graph: Graph, node: Node, ctx: PassContext) -> tuple[str, str]:
    cfg, what = ctx.config, node.attr("function", "alu")
    if cfg.block_in != cfg.block_out:
        return "cpu", (f"int8 {what}: the ALU loads operands through identity weights, which "
                       f"need block_in == block_out ({cfg.block_in} != {cfg.block_out})")
    if graph.types[node.outputs[0]].rank < 2:
        return "cpu", f"int8 {what} of a rank-1 tensor: no packed layout for the accelerator"
    return "accel", f"int8 {what} on the ALU (the float op's exact integer form)"


def _cpu_reason(graph: Graph, node: Node) -> str:
    if op_of(node).qdq:
        return "float32 <-> int8 conversion runs on the CPU"
    if op_of(node).quant == "lookup":
        return (f"int8 lookup table of {'/'.join(node.attr('function')) or 'a requantisation'}"
                f": the ALU has no table lookup")
    dtypes = {graph.types[v].dtype for v in node.inputs if v}
    if "float32" in dtypes:
        why = graph.meta.get("float_reasons", {}).get(node.name)
        return f"float32 {node.op}: not quantised" + (f" ({why})" if why else "")
    if op_of(node).epilogue:
        return f"int {node.op} not fed by an accelerator GEMM (nothing in the accumulator)"
    return f"{'/'.join(sorted(dtypes))} {node.op}: no accelerator template"


def _place_epilogue(graph: Graph, node: Node, anchor_of: dict, place: dict) -> bool:
    """Place `node` on the accelerator if it is the next step of a GEMM's epilogue."""
    acc = next((v for v in node.inputs if v in anchor_of and
                single_consumer(graph, v) is node), None)
    if acc is None:
        return False
    anchor = anchor_of[acc]
    place[node.name] = ("accel", f"epilogue of {anchor}: {_epilogue_role(graph, node, acc)}")
    if graph.types[node.outputs[0]].dtype == "int32":
        anchor_of[node.outputs[0]] = anchor
    if op_of(node).epilogue == "add":
        for load in _residual_chain(graph, _other_operand(node, acc)):
            place[load.name] = ("accel", f"residual operand of {node.name}")
    return True


def partition(graph: Graph, ctx: PassContext) -> Graph:
    place: dict[str, tuple[str, str]] = {}
    anchor_of: dict[str, str] = {}  # accel value -> the GEMM node whose accumulator holds it
    for node in graph.nodes:
        if op_of(node).quant == "alu":
            place[node.name] = _alu_reason(graph, node, ctx)
            continue
        if op_of(node).gemm is not None:
            place[node.name] = _gemm_reason(graph, node, ctx)
            if place[node.name][0] == "accel":
                anchor_of[node.outputs[0]] = node.name
            continue
        if op_of(node).epilogue and _place_epilogue(graph, node, anchor_of, place):
            continue
        place.setdefault(node.name, ("cpu", _cpu_reason(graph, node)))
    nodes = tuple(n.with_attrs(target=place[n.name][0]) for n in graph.nodes)
    report = tuple(Placement(n.name, n.op, *place[n.name]) for n in graph.nodes)
    return graph.replace(nodes=nodes).with_meta(partition=report)


def partition_report(graph: Graph) -> str:
    """A readable table of where each node runs and why."""
    rows = graph.meta.get("partition", ())
    if not rows:
        return f"graph {graph.name}: not partitioned"
    width = max(len(p.node) for p in rows)
    accel = sum(p.target == "accel" for p in rows)
    lines = [f"partition of {graph.name}: {accel} nodes on the accelerator, "
             f"{len(rows) - accel} on the CPU"]
    lines += [f"  {p.node:<{width}}  {p.op:<16} {p.target:<5}  {p.reason}" for p in rows]
    return "\n".join(lines)
