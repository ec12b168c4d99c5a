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
    from ..exec.lower import Unsupported, conv_shape, epilogue_of
    from .templates.accel import conv2d_task, dense_task
    found: dict = {}
    for node in graph.nodes:
        task = None
        if node.attr("target") == "accel" and node.op in ("accel_conv2d", "accel_dense"):
            try:
                ep, _ = epilogue_of(graph, node, graph.types[node.outputs[0]].shape[1], cfg)
                if node.op == "accel_conv2d":
                    task = conv2d_task(cfg, conv_shape(graph, node, cfg), ep)
                else:
                    x = graph.types[node.inputs[0]].shape
                    w = graph.types[node.inputs[1]].shape
                    task = dense_task(cfg, x[0] * x[2], x[1] * x[3], w[0] * w[2], ep)
            except Unsupported:
                task = None
        else:
            task = _cpu_task(graph, node)
        if task is not None:
            found.setdefault(task.key, task)
    return list(found.values())


def _cpu_task(graph, node) -> Task | None:
    try:
        from .templates.cpu import cpu_tasks_of
    except ImportError:
        return None
    types = [graph.types.get(v) if v else None for v in node.inputs]
    return cpu_tasks_of(node, types)


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
