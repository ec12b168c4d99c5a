"""Tuning tasks of a model: one per distinct accelerator layer and tunable CPU kernel.

    tasks = tasks_of_model("model.onnx", "default")          # [Task], distinct, in order
    tasks = tasks_of_graph(compiled_graph, cfg)

The model goes through the graph passes exactly as `compile_model` runs them (same
quantisation, partition, layout and fusion), so the tasks are the workloads compilation
will look up: an accelerator conv2d/dense with its fused epilogue, or a CPU kernel.
"""
from __future__ import annotations

from vtalab.spec import Config, load_config

from .task import Task


def tasks_of_graph(graph, cfg: Config) -> list[Task]:
    """The distinct tasks of a compiled graph's nodes, in order: each op's `tune` reader
    (the op table) on the node; an accelerator node the accelerator cannot run has none,
    nor a float node of an int8 graph that runs its reference (exec/cpu_ops.py)."""
    from ..exec.cpu_ops import runs_reference
    from ..exec.lower import Unsupported
    from ..graph.opdef import op_of
    from .templates.cpu import cpu_tasks_of
    found: dict = {}
    exact = bool(graph.meta.get("quant_exponents"))
    for node in graph.nodes:
        types = [graph.types.get(v) if v else None for v in node.inputs]
        if node.attr("target") != "accel" and runs_reference(node, types, exact):
            continue
        if node.attr("target") != "accel":
            task = cpu_tasks_of(node, types)
        elif op_of(node).tune is None:
            continue
        else:
            try:
                task = op_of(node).tune(node, types, graph, cfg)
            except Unsupported:
                task = None
        if task is not None:
            found.setdefault(task.key, task)
    return list(found.values())


def tasks_of_model(model, config="default", calibration=None, per_channel: bool = False,
                   accel_only: bool = False) -> list[Task]:
    from ..exec.module import check_calibration
    from ..graph import compile_graph, load_onnx
    cfg = load_config(config)
    graph = load_onnx(model) if not hasattr(model, "nodes") else model
    if calibration is not None:
        calibration = check_calibration(graph, calibration)
    final = compile_graph(graph, cfg, calibration=calibration, per_channel=per_channel)
    tasks = tasks_of_graph(final, cfg)
    return [t for t in tasks if t.impl.kind == "accel"] if accel_only else tasks
