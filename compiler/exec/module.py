"""The executable module: compiled steps bound to a planned DRAM layout.

    module = compile_model("resnet18.onnx", "default", calibration=samples)
    outputs, profile = module.run(x)                  # fsim by default; backend="rtl"
    save_module(module, "resnet18.vtl"); module = load_module("resnet18.vtl")

`build_module(final_graph, cfg)` turns the graph pipeline's result into one `Step` per node,
in graph order: an accelerator step (a runtime `Program` with its operand bindings) for each
node placed on the accelerator whose op the accelerator lowering runs (`OpDef.lower`:
accel_conv2d, accel_dense, ...) and can run, a CPU step (a node whose kernel is made on
first use) for every other node. Activations live in the memory plan's arena;
residual scratch buffers follow it; constants are kept per name.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from vtalab.spec import Config, load_config
from vtalab.spec.errors import DeviceError

from ..graph.ir import Graph, Node, TensorType
from ..graph.opdef import op_of, opdef
from ..graph.passes.partition import partition_report
from vtalab.runtime.device import default_alignment
from vtalab.runtime.program import Program
from .lower import Unsupported, lower_accel

FORMAT_VERSION = 1
#: each run of consecutive accelerator layers becomes this many joined programs
JOIN_PARTS = 2


def _align(n: int, cfg: Config) -> int:
    """``n`` rounded up to the runtime's alignment (a whole number of entries of every
    buffer kind of ``cfg``)."""
    a = default_alignment(cfg)
    return -(-n // a) * a


@dataclass
class Step:
    name: str
    op: str
    target: str                     # "accel" or "cpu"
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    reason: str = ""
    node: Node | None = None        # cpu steps
    kernel: Program | None = None
    bindings: dict = field(default_factory=dict)
    widen: tuple | None = None      # (residual value, scratch name)
    info: dict = field(default_factory=dict)
    stream: object = None           # the kernel's finished stream (joinable; not saved)


@dataclass
class Module:
    cfg: Config
    name: str
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    types: dict                     # value -> TensorType (activations and scratch)
    offsets: dict                   # value -> byte offset in the arena (+ scratch)
    arena_bytes: int
    consts: dict                    # name -> array (graph constants and prepared operands)
    steps: list
    report: str = ""
    stats: dict = field(default_factory=dict)
    graph: Graph | None = None      # the compiled graph (not stored in module files)

    def input_type(self, index: int = 0) -> TensorType:
        return self.types[self.inputs[index]]

    def run(self, feeds, device=None, backend: str = "fsim", progress=None, keep=False,
            jobs: int = 1):
        """Run on `device` (or a fresh one of `backend`); returns (outputs, Profile).
        ``backend="rtl", jobs=J``: the accelerator steps on J RTL processes, each checked
        against the functional simulator (compiler/exec/parallel.py)."""
        if jobs > 1:
            if backend != "rtl" or device is not None or keep:
                raise DeviceError(f"jobs must be 1 unless backend is rtl without a device "
                                  f"or keep, not {jobs}")
            from .parallel import run_parallel_rtl
            return run_parallel_rtl(self, feeds, jobs, progress)
        from .runner import run_module
        return run_module(self, feeds, device, backend, progress, keep)

    def accel_layers(self) -> list[dict]:
        """Every layer on the accelerator, a joined step's one by one: name, op and the
        lowering's info (macs, knobs, ...)."""
        return [layer for s in self.steps if s.target == "accel"
                for layer in s.info.get("members", [{"name": s.name, "op": s.op, **s.info}])]

    def summary(self) -> str:
        accel = [s for s in self.steps if s.target == "accel"]
        macs = sum(s.info.get("macs", 0) for s in self.steps)
        on_accel = sum(s.info.get("macs", 0) for s in accel)
        share = on_accel / macs if macs else 0.0
        return (f"module {self.name} for {self.cfg.name} ({self.cfg.fingerprint()}): "
                f"{len(self.steps)} steps, {len(accel)} on the accelerator "
                f"({sum(len(s.kernel) for s in accel):,} instructions, {share:.1%} of "
                f"{macs:,} MACs), DRAM arena {self.arena_bytes / 1024:,.1f} KiB, constants "
                f"{sum(a.nbytes for a in self.consts.values()) / 1024:,.1f} KiB")


def _macs(graph: Graph, node: Node) -> int:
    """The node's multiply-accumulates (its op table entry's count; 0 for other ops)."""
    count = opdef(node.op, node.name).macs
    if count is None:
        return 0
    return int(count(node, [graph.types[v] if v else None for v in node.inputs],
                     graph.types[node.outputs[0]]))


def _cpu_step(graph: Graph, node: Node, reason: str) -> Step:
    """A CPU step; in an int8 graph its float kernels must equal the float reference
    (``info["exact"]``, compiler/exec/cpu_ops.py)."""
    info = {"macs": _macs(graph, node)}
    if graph.meta.get("quant_exponents"):
        info["exact"] = True
    return Step(node.name, node.op, "cpu", node.inputs, node.outputs, reason, node=node,
                info=info)


def build_module(graph: Graph, cfg: Config | str | None = None, echo=None,
                 join: int | None = None) -> Module:
    """Lower every node of a compiled (final) graph into a module; each run of
    consecutive accelerator steps is joined into ``join`` programs (None: JOIN_PARTS;
    0: one per layer; compiler/exec/join.py)."""
    cfg = load_config(cfg)
    reasons = {p.node: p.reason for p in graph.meta.get("partition", ())}
    plan = graph.meta["memory_plan"]
    offsets = {b.value: b.offset for b in plan.buffers}
    types = {v: graph.types[v] for v in offsets}
    consts, steps, scratch_end = {}, [], _align(plan.arena_bytes, cfg)
    accel_nodes = [n for n in graph.nodes if n.attr("target") == "accel"]
    for node in graph.nodes:
        reason = reasons.get(node.name) or "; ".join(dict.fromkeys(   # a fused chain: its ops'
            reasons[b.name] for b in node.attr("body", ()) if b.name in reasons))
        if node.attr("target") != "accel" or op_of(node).lower is None:
            steps.append(_cpu_step(graph, node, reason or "cpu"))
            continue
        if echo:
            echo(f"  lowering {node.name} ({len([s for s in steps if s.target == 'accel']) + 1}"
                 f"/{len(accel_nodes)})")
        try:
            plan_ = lower_accel(graph, node, cfg)
        except Unsupported as exc:
            steps.append(_cpu_step(graph, node, f"accelerator lowering: {exc}"))
            continue
        consts.update(plan_.consts)
        if plan_.widen is not None:
            residual, scratch = plan_.widen
            types[scratch] = TensorType(graph.types[residual].shape, "int32")
            offsets[scratch] = scratch_end
            scratch_end = _align(scratch_end + types[scratch].nbytes, cfg)
        for kind, name in plan_.bindings.values():
            if kind == "const":
                consts.setdefault(name, graph.constants.get(name))
        steps.append(Step(node.name, node.op, "accel", node.inputs, node.outputs,
                          reason or "accelerator", kernel=plan_.kernel,
                          bindings=plan_.bindings, widen=plan_.widen, info=plan_.info,
                          stream=plan_.stream))
    for step in steps:
        if step.target == "cpu":
            for v in step.inputs:
                if v and v in graph.constants:
                    consts[v] = graph.constants[v]
    for v in graph.outputs:
        types.setdefault(v, graph.types[v])
    from .join import join_steps
    steps = join_steps(steps, cfg, JOIN_PARTS if join is None else join,
                       keep=graph.outputs,
                       shapes={v: tuple(t.shape) for v, t in types.items()}, offsets=offsets)
    report = partition_report(graph) + "\n" + plan.report()
    return Module(cfg, graph.name, tuple(graph.inputs), tuple(graph.outputs), types,
                  offsets, scratch_end, consts, steps, report)


def compile_model(model, config: Config | str | None = "default", calibration=None,
                  per_channel: bool = False, quantize: bool = True, echo=None,
                  tuning_log=None, join: int | None = None) -> Module:
    """ONNX (path, bytes or ModelProto) or a Graph -> Module, timing each phase.

    ``tuning_log`` (a path or TuningLog): each accelerator layer and CPU kernel uses its
    best record there; ``module.stats["tuning"]`` lists the records used and the tasks
    without one (each reported once, as an ``UntunedWarning``). ``join``: how many
    programs each run of consecutive accelerator layers becomes (None: JOIN_PARTS; 0:
    one per layer)."""
    from ..graph import compile_graph, load_onnx
    cfg = load_config(config)
    start = time.perf_counter()
    graph = model if isinstance(model, Graph) else load_onnx(model)
    if calibration is not None:
        calibration = check_calibration(graph, calibration)
    final = compile_graph(graph, cfg, calibration=calibration, per_channel=per_channel,
                          quantize=quantize)
    mid = time.perf_counter()
    if tuning_log is not None:
        from ..tune import ApplyBest
        with ApplyBest(tuning_log) as best:
            module = build_module(final, cfg, echo, join)
            module.graph = final
            _lookup_cpu_tasks(module, best)
        module.stats["tuning"] = {"log": str(best.log.path), "untuned": best.untuned,
                                  "used": {k: {f: r[f] for f in ("knobs", "cost", "unit",
                                                                 "measure", "time")}
                                           for k, r in best.used.items()}}
    else:
        module = build_module(final, cfg, echo, join)
    module.graph = final
    end = time.perf_counter()
    module.stats.update(graph_seconds=mid - start, lower_seconds=end - mid,
                        compile_seconds=end - start)
    return module


def _lookup_cpu_tasks(module: Module, best) -> None:
    """CPU kernels are built on first run: look their tasks up now, so the module records
    the choices (the runner applies them from ``stats["tuning"]``); a float step of an int8
    graph that runs its reference has no tunable kernel."""
    from ..tune.templates.cpu import cpu_tasks_of
    from .cpu_ops import runs_reference
    for step in module.steps:
        if step.target == "cpu" and step.node is not None:
            types = [module.graph.types.get(v) if v else None for v in step.node.inputs]
            if runs_reference(step.node, types, step.info.get("exact", False)):
                continue
            task = cpu_tasks_of(step.node, types)
            if task is not None:
                best.lookup(task)


def check_calibration(graph: Graph, samples) -> list[np.ndarray]:
    """A calibration set as a list of arrays shaped like the single input (or a stack)."""
    from ..graph.errors import ModelError
    want = graph.types[graph.inputs[0]]
    arrays = list(samples) if not isinstance(samples, np.ndarray) else None
    if arrays is None:
        if samples.shape == want.shape:
            arrays = [samples]
        elif samples.shape[1:] == want.shape or samples.shape[1:] == want.shape[1:]:
            arrays = [s.reshape(want.shape) for s in samples]
        else:
            raise ModelError(f"calibration data must be shaped {want.shape} or [count, "
                             f"*{want.shape}], not {tuple(samples.shape)}")
    for a in arrays:
        if tuple(np.shape(a)) != want.shape:
            raise ModelError(f"calibration sample must be shaped {want.shape}, "
                             f"not {tuple(np.shape(a))}")
    return [np.asarray(a, np.float32) for a in arrays]
