"""Lowering of one `accel_alu` node (int8 elementwise on the ALU) to an accelerator kernel.

The node's packed operands are runs of (entries, batch, block) int8 entries in DRAM; the
kernel (alu_template.py) reads them and its identity weights (constants made here) and
writes the packed int8 result. A spec the ALU cannot run, or that fits no tiling, raises
`Unsupported` and the module runs the node on the CPU (same value: opdefs/alu.py)."""
from __future__ import annotations

import numpy as np

from vtalab.spec import Config

from ..errors import CompileError
from ..graph.ir import Graph, Node
from ..vta import build_with_stream
from .alu_template import AluSpec, check_spec, eye_weights, schedule_alu, tilings
from .lower import MAX_TRIES, AccelPlan, Unsupported


def _entries(graph: Graph, node: Node, cfg: Config) -> int:
    shapes = {graph.types[v].shape for v in (*node.inputs, node.outputs[0])}
    shape = shapes.pop()
    if shapes or shape[-2:] != (cfg.batch, cfg.block_out):
        raise Unsupported(f"operands of {node.name} must share one packed shape ending in "
                          f"({cfg.batch}, {cfg.block_out}), not {sorted(shapes | {shape})}")
    return int(np.prod(shape[:-2]))


def lower_alu(graph: Graph, node: Node, cfg: Config) -> AccelPlan:
    spec = AluSpec.of(node, len(node.inputs))
    try:
        check_spec(cfg, spec)
    except CompileError as exc:
        raise Unsupported(f"accel_alu {node.name}: {exc}") from None
    entries = _entries(graph, node, cfg)
    errors = []
    for tile, vthreads in tilings(cfg, entries, spec)[:MAX_TRIES]:
        try:
            sch, args = schedule_alu(cfg, entries, spec, tile, vthreads)
            program, stream = build_with_stream(sch, cfg, args, node.name)
            break
        except CompileError as exc:
            errors.append(f"tile {tile} x {vthreads} threads: {exc}")
    else:
        raise Unsupported(f"accel_alu {node.name} must fit the accelerator with some tiling, "
                          f"not {errors[-1] if errors else 'with none'}")
    bindings = {f"x{i}": ("value", v) for i, v in enumerate(node.inputs)}
    bindings["out"] = ("value", node.outputs[0])
    consts = {}
    for j, eye in enumerate(eye_weights(cfg, spec)):
        consts[f"{node.name}:eye{j}"] = eye
        bindings[f"eye{j}"] = ("const", f"{node.name}:eye{j}")
    info = {"macs": 0, "what": f"{node.attr('function', 'alu')} on the ALU, {entries} entries",
            "knobs": f"tile {tile} x {vthreads} threads"}
    return AccelPlan(program, bindings, consts, None, info, stream)
