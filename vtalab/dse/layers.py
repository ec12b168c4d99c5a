"""Per-layer numbers of a compiled module: the cycle model's prediction for the tiling the
compiler chose, and what a run measured (cycles on RTL, DRAM bytes, micro-ops).

    rows = layer_rows(module, fsim_profile, rtl_profile=None)

The prediction is compiler/tune's analytic model (`conv2d_cycles`) for the layer's shape,
its fused epilogue and the knobs the lowering kept (the tuning log's best when one was
applied), the same numbers the compiler ranked tilings by; a dense layer is the model's
1x1 convolution with one row per M block, as the dense template ranks it.
"""
from __future__ import annotations

import ast
import re
from types import SimpleNamespace

from vtalab.compiler.topi import Conv2dKnobs, DenseKnobs

_KNOB = re.compile(r"(\w+)=('[^']*'|-?\d+)")


def parse_knobs(text: str):
    """``Conv2dKnobs(tile_h=8, ..., vthread_axis='co')`` (as recorded in a step's info)
    back into the knobs object."""
    cls = {"Conv2dKnobs": Conv2dKnobs, "DenseKnobs": DenseKnobs}.get(text.split("(")[0])
    if cls is None:
        return None
    return cls(**{k: ast.literal_eval(v) for k, v in _KNOB.findall(text)})


def predicted_cycles(module, step) -> int | None:
    """The cycle model's cycles for one accelerator step of ``module`` (a joined step:
    the sum of its layers', the model knowing nothing of what joining saves)."""
    members = step.info.get("members")
    if members:
        parts = [predicted_cycles(module, SimpleNamespace(name=m["name"], info=m))
                 for m in members]
        return None if None in parts else sum(parts)
    from vtalab.compiler.exec.lower import conv_shape, epilogue_cost, epilogue_of
    from vtalab.compiler.tune.cost import conv2d_cycles
    graph, cfg = module.graph, module.cfg
    knobs = parse_knobs(step.info.get("knobs", ""))
    node = next((n for n in graph.nodes if n.name == step.name), None)
    if knobs is None or node is None:
        return None
    ep, _ = epilogue_of(graph, node, graph.types[node.outputs[0]].shape[1], cfg)
    cost = epilogue_cost(ep)
    if isinstance(knobs, Conv2dKnobs):
        return conv2d_cycles(cfg, conv_shape(graph, node, cfg), knobs, cost)
    from vtalab.compiler.tune.templates.accel import DENSE, dense_task
    x, w = graph.types[node.inputs[0]].shape, graph.types[node.inputs[1]].shape
    task = dense_task(cfg, x[0] * x[2], x[1] * x[3], w[0] * w[2], ep)
    conv = Conv2dKnobs(knobs.tile_m, 0, knobs.tile_n, knobs.tile_k, knobs.vthreads, "co")
    return conv2d_cycles(cfg, DENSE.as_conv(task), conv, cost)


def layer_rows(module, fsim, rtl=None) -> list[dict]:
    """One row per step: accelerator steps with predicted (and RTL) cycles, CPU steps with
    their MACs (work the accelerator did not take)."""
    rtl_by_name = {r.name: r for r in rtl.records} if rtl is not None else {}
    steps = {s.name: s for s in module.steps}
    rows = []
    for rec in fsim.records:
        step = steps[rec.name]
        row = {"name": rec.name, "op": rec.op, "placement": rec.placement, "macs": rec.macs}
        if rec.placement == "accel":
            row.update(what=step.info.get("what"), knobs=step.info.get("knobs"),
                       ideal_cycles=step.info.get("ideal_cycles"),
                       cycles_model=predicted_cycles(module, step),
                       dram_bytes=rec.dram_bytes,
                       gemm_uops=rec.counters.get("gemm_uops"),
                       alu_uops=rec.counters.get("alu_uops"))
            hit = rtl_by_name.get(rec.name)
            if hit is not None:
                row["cycles_rtl"] = hit.cycles
        rows.append(row)
    return rows


def totals(rows: list, cfg, source: str) -> dict:
    """Network metrics from the layer rows, with cycles from ``source`` ("model"/"rtl")."""
    accel = [r for r in rows if r["placement"] == "accel"]
    macs = sum(r["macs"] for r in rows)
    accel_macs = sum(r["macs"] for r in accel)
    key = "cycles_rtl" if source == "rtl" else "cycles_model"
    cycles = [r.get(key) for r in accel]
    out = {"macs": macs, "accel_macs": accel_macs, "accel_layers": len(accel),
           "cpu_layers_with_macs": sum(1 for r in rows if r["placement"] != "accel"
                                       and r["macs"]),
           "accel_share": accel_macs / macs if macs else 0.0,
           "dram_bytes": sum(r.get("dram_bytes") or 0 for r in accel),
           "ideal_cycles": -(-accel_macs // cfg.macs_per_cycle)}
    if not accel or any(c is None for c in cycles):
        return out
    total = int(sum(cycles))
    seconds = total / (cfg.clock_mhz * 1e6)
    out.update(cycles=total, utilization=accel_macs / cfg.macs_per_cycle / total,
               latency_ms=seconds * 1e3, gops=2 * accel_macs / seconds / 1e9,
               ops_per_dram_byte=2 * accel_macs / out["dram_bytes"] if out["dram_bytes"]
               else None)
    if source == "rtl":
        model = sum(r["cycles_model"] or 0 for r in accel)
        out.update(cycles_model=model, model_error=(model - total) / total)
    return out
