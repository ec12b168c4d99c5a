"""Tunable CPU pooling and softmax templates (``cpu.pool``, ``cpu.softmax``); the shared
pieces (inputs on a grid, the host fingerprint, lanes) are in cpu.py."""
from __future__ import annotations

import numpy as np

from ...cpu import knobs as ck
from ...cpu.common import pair, padding4, vector_lanes
from ...cpu.conv import out_size
from ...errors import CompileError
from ..space import Bool, Choice, Space
from ..task import Task
from .cpu import CpuTemplate, _call, _grid, _ints, _lanes

POOL_KINDS = ("max", "avg", "global_avg", "global_max")


def pool_task(kind: str, x_shape, dtype="float32", kernel=1, stride=None, padding=0,
              dilation=1, count_include_pad=False) -> Task:
    """``kind``: "max", "avg" (windowed; ``stride`` None is the kernel), "global_avg" or
    "global_max" (the window arguments are ignored)."""
    if kind not in POOL_KINDS:
        raise CompileError(f"pool kind must be one of {POOL_KINDS}, not {kind!r}")
    work = {"kind": kind, "x": _ints(x_shape), "dtype": str(dtype)}
    if not kind.startswith("global"):
        kernel = pair(kernel, "kernel")
        work.update(kernel=list(kernel), stride=list(pair(stride or kernel, "stride")),
                    pads=list(padding4(padding)), dilation=list(pair(dilation, "dilation")),
                    count_include_pad=bool(count_include_pad) and kind == "avg")
    return Task.make("cpu.pool", work)


def _window(a) -> tuple:
    """(kind, shape, dtype, kernel, stride, pads, dilation, include) of a windowed pool."""
    return (a["kind"], tuple(a["x"]), a["dtype"], tuple(a["kernel"]), tuple(a["stride"]),
            tuple(a["pads"]), tuple(a["dilation"]), a["kind"] == "max" or a["count_include_pad"])


class PoolTemplate(CpuTemplate):
    """Pooling (``cpu.max_pool2d`` / ``avg_pool2d`` / ``global_*_pool``). Workload: ``{"kind":
    "max"|"avg"|"global_avg"|"global_max", "x": [N, C, H, W], "dtype"}``, windowed pools
    also ``"kernel": [kh, kw], "stride", "pads": [t, l, b, r], "dilation",
    "count_include_pad"``. Knobs by the kernel's path: separable max pool ``lanes`` and
    ``parallel`` ("plane" or "row"); windowed te pool ``lanes`` (dividing OW), ``unroll_kw``,
    ``parallel``; global pool ``lanes`` (partial sums per channel), ``parallel``."""
    name = "cpu.pool"

    def _path(self, a) -> str:
        from ...cpu.maxpool import separable
        if a["kind"].startswith("global"):
            return "global"
        kind, shape, _, kernel, stride, pads, dilation, _ = _window(a)
        return "separable" if separable(kind, shape, kernel, stride, pads, dilation) else \
            "window"

    def default(self, task: Task) -> dict:
        a = task.args
        if self._path(a) == "global":
            return ck.global_pool_knobs(a["x"][2] * a["x"][3], a["dtype"])
        from ...cpu.pool import pool2d_knobs
        return pool2d_knobs(*_window(a)[:7])

    def space(self, task: Task) -> Space:
        a, d, path = task.args, self.default(task), self._path(task.args)
        full = vector_lanes(None, a["dtype"])
        if path == "global":
            return Space([Choice("lanes", _lanes(full, d["lanes"], upto=a["x"][2] * a["x"][3])),
                          Bool("parallel")])
        if path == "separable":
            return Space([Choice("lanes", _lanes(full, d["lanes"])),
                          Choice("parallel", ck.POOL_PARALLEL)])
        _, _, _, (kh, kw), (sh, sw), pads, (dh, dw), _ = _window(a)
        ow = out_size(a["x"][3], kw, sw, dw, pads[1], pads[3])
        return Space([Choice("lanes", _lanes(full, d["lanes"], divides=ow)), Bool("unroll_kw"),
                      Bool("parallel")])

    def func(self, task: Task, point: dict):
        from ...cpu.pool import global_pool_func, pool2d_func
        a = task.args
        if self._path(a) == "global":
            return global_pool_func(a["kind"][7:], tuple(a["x"]), a["dtype"], None, point)
        return pool2d_func(*_window(a), None, point)

    def inputs(self, task: Task, seed: int = 0) -> dict:
        return {"x": _grid(np.random.default_rng(seed), task.args["x"], task.args["dtype"])}

    def build(self, task: Task, point: dict):
        a = task.args
        if self._path(a) != "global":
            call = _call(self.kernel(task, point))
            return lambda inputs: call(inputs["x"])
        n, c, h, w = a["x"]
        call = _call(self.kernel(task, point), (n, c, 1, 1))
        return lambda inputs: call(inputs["x"].reshape(n, c, h * w))

    def reference(self, task: Task, inputs: dict) -> np.ndarray:
        from ...exec import cpu_numpy
        from ...graph.ir import Node
        a, x = task.args, inputs["x"]
        if a["kind"] == "global_max":
            return x.max(axis=(2, 3), keepdims=True)
        if a["kind"] == "global_avg":
            return x.astype(np.float64).mean(axis=(2, 3), keepdims=True).astype(x.dtype)
        node = Node("ref", f"{a['kind']}_pool", ("x",), ("y",), {
            "kernel": a["kernel"], "strides": a["stride"], "pads": a["pads"],
            "dilations": a["dilation"], "count_include_pad": int(a["count_include_pad"])})
        return (cpu_numpy.max_pool if a["kind"] == "max" else cpu_numpy.avg_pool)(node, x)


# ---- softmax -----------------------------------------------------------------------------

def softmax_task(rows: int, cols: int) -> Task:
    return Task.make("cpu.softmax", {"rows": int(rows), "cols": int(cols),
                                     "dtype": "float32"})


class SoftmaxTemplate(CpuTemplate):
    """Softmax over the rows of a float32 [rows, cols] array (``cpu.softmax``). Workload:
    ``{"rows", "cols", "dtype": "float32"}``. Knobs: ``lanes`` (vector width), ``chains``
    (independent vector accumulators), ``parallel`` rows; constraint: the chains fit the
    row (or are one)."""
    name = "cpu.softmax"

    def default(self, task: Task) -> dict:
        return ck.softmax_knobs(task.args["cols"])

    def space(self, task: Task) -> Space:
        a, d = task.args, self.default(task)
        knobs = [Choice("lanes", _lanes(vector_lanes(None), d["lanes"])),
                 Choice("chains", sorted({1, 2, 4, 8, d["chains"]})), Bool("parallel")]
        return Space(knobs, [("the chains fit the row",
                              lambda p: p["chains"] == 1 or p["chains"] * p["lanes"] <= a["cols"])])

    def func(self, task: Task, point: dict):
        from ...cpu.softmax import softmax_knob_func
        return softmax_knob_func(task.args["rows"], task.args["cols"], None, point)

    def inputs(self, task: Task, seed: int = 0) -> dict:
        rng = np.random.default_rng(seed)
        return {"x": (rng.standard_normal((task.args["rows"], task.args["cols"])) * 3)
                .astype(np.float32)}

    def build(self, task: Task, point: dict):
        call = _call(self.kernel(task, point))
        return lambda inputs: call(inputs["x"])

    def reference(self, task: Task, inputs: dict) -> np.ndarray:
        x = inputs["x"].astype(np.float64)
        e = np.exp(x - x.max(axis=-1, keepdims=True))
        return (e / e.sum(axis=-1, keepdims=True)).astype(np.float32)
