"""Measurement behind one interface: ``rtl`` cycles, ``model`` (functional simulator +
cycle model), ``cpu`` wall time.

    m = get_measurer("rtl")
    res = m.measure(task, point)       # MeasureResult(cost, error, detail)

Every measurement runs the candidate on seeded inputs and compares its output bit for bit
(float CPU kernels: to 1e-5 relative) with the template's reference: a wrong result is a
failed trial (``error`` says so), never a fast one. Exceptions become error records with
the exception's type and message. Measurers run inside executor workers; each worker
keeps its own device (one Verilator model per config fingerprint) and reference outputs.
"""
from __future__ import annotations

import time
import traceback
from dataclasses import dataclass, field

import numpy as np

from ..errors import CompileError


@dataclass
class MeasureResult:
    cost: float | None
    error: str | None = None
    detail: dict = field(default_factory=dict)


class Measurer:
    name = ""
    kinds: tuple = ()

    def __init__(self, **options):
        self.options = options

    def measure(self, task, point: dict) -> MeasureResult:
        tpl = task.impl
        if tpl.kind not in self.kinds:
            return MeasureResult(None, f"measure {self.name} must be given a task of kind "
                                       f"{'/'.join(self.kinds)}, not {tpl.kind}")
        violation = tpl.space(task).violation(point)
        if violation is not None:
            return MeasureResult(None, f"invalid point: breaks '{violation}'")
        try:
            return self._measure(task, point)
        except Exception as exc:  # an error record, not a crash of the tuner
            tb = traceback.format_exception_only(type(exc), exc)[-1].strip()
            return MeasureResult(None, tb[:2000])

    def _measure(self, task, point) -> MeasureResult:
        raise NotImplementedError


_REFERENCES: dict = {}       # task key -> (inputs, expected), per process


def inputs_and_reference(task):
    hit = _REFERENCES.get(task.key)
    if hit is None:
        tpl = task.impl
        inputs = tpl.inputs(task, seed=0)
        hit = (inputs, tpl.reference(task, inputs))
        if len(_REFERENCES) > 64:
            _REFERENCES.clear()
        _REFERENCES[task.key] = hit
    return hit


def check_output(task, got: np.ndarray, expected: np.ndarray) -> str | None:
    """None if ``got`` is right, else what is wrong."""
    got, expected = np.asarray(got), np.asarray(expected)
    if got.shape != expected.shape:
        return f"wrong result: output shape must be {expected.shape}, not {got.shape}"
    if np.issubdtype(expected.dtype, np.floating):
        ok = np.allclose(got, expected, rtol=1e-5, atol=1e-5)
    else:
        ok = np.array_equal(got, expected)
    if ok:
        return None
    bad = int(np.sum(~np.isclose(got, expected, rtol=1e-5, atol=1e-5))) \
        if np.issubdtype(expected.dtype, np.floating) else int(np.sum(got != expected))
    return f"wrong result: {bad} of {expected.size} outputs differ from the reference"


class RtlMeasure(Measurer):
    """Cycles on the Verilated core (the default for accelerator tasks)."""
    name, kinds = "rtl", ("accel",)
    _devices: dict = {}

    def device(self, cfg):
        from vtalab.runtime import open_device
        dev = self._devices.get(cfg.fingerprint())
        if dev is None:
            dev = open_device("rtl", cfg, dram_bytes=self.options.get("dram_bytes", 64 << 20))
            self._devices[cfg.fingerprint()] = dev
        return dev

    def _measure(self, task, point) -> MeasureResult:
        inputs, expected = inputs_and_reference(task)
        dev = self.device(task.cfg)
        limit = self.options.get("max_cycles")
        if limit:
            dev.cycle_limit = int(limit)
        out, counters = task.impl.run(task, point, inputs, dev)
        wrong = check_output(task, out, expected)
        detail = {k: counters[k] for k in ("cycles", "gemm_utilization") if k in counters}
        if wrong:
            return MeasureResult(None, wrong, detail)
        return MeasureResult(float(counters["cycles"]), None, detail)


class ModelMeasure(Measurer):
    """The functional simulator for the result, the analytic cycle model for the cost."""
    name, kinds = "model", ("accel",)

    def _measure(self, task, point) -> MeasureResult:
        tpl = task.impl
        cost = tpl.prior(task, point)
        if cost is None:
            raise CompileError(f"template {tpl.name} must have a cycle model for measure "
                               f"'model', not none")
        if self.options.get("check", True):
            inputs, expected = inputs_and_reference(task)
            out, _ = tpl.run(task, point, inputs, None)
            wrong = check_output(task, out, expected)
            if wrong:
                return MeasureResult(None, wrong)
        return MeasureResult(float(cost))


class CpuMeasure(Measurer):
    """Wall time of the JIT kernel: ``repeat`` runs of at least ``min_repeat_ms`` each
    (``number`` calls per run, grown to fill that time); cost = the minimum per call,
    the median is kept in ``detail``."""
    name, kinds = "cpu", ("cpu",)

    def _measure(self, task, point) -> MeasureResult:
        inputs, expected = inputs_and_reference(task)
        fn = task.impl.build(task, point)
        wrong = check_output(task, fn(inputs), expected)
        if wrong:
            return MeasureResult(None, wrong)
        repeat = int(self.options.get("repeat", 5))
        min_s = float(self.options.get("min_repeat_ms", 20)) / 1000
        number, runs = 1, []
        while True:
            t0 = time.perf_counter()
            for _ in range(number):
                fn(inputs)
            dt = time.perf_counter() - t0
            if dt >= min_s or number >= 1 << 16:
                break
            number *= 2 if dt <= 0 else max(2, min(16, int(min_s / dt * 1.2) + 1))
        runs.append(dt / number)
        for _ in range(repeat - 1):
            t0 = time.perf_counter()
            for _ in range(number):
                fn(inputs)
            runs.append((time.perf_counter() - t0) / number)
        return MeasureResult(min(runs), None, {"median_s": float(np.median(runs)),
                                               "number": number, "repeat": repeat})


MEASURERS = {m.name: m for m in (RtlMeasure, ModelMeasure, CpuMeasure)}


def register_measurer(cls):
    """Add a measurer (e.g. a board's); it must be importable in worker processes."""
    MEASURERS[cls.name] = cls
    return cls


def get_measurer(name: str, **options) -> Measurer:
    if name not in MEASURERS:
        raise CompileError(f"measure must be one of {sorted(MEASURERS)}, not {name!r}")
    return MEASURERS[name](**options)


def default_measure(task) -> str:
    return "rtl" if task.impl.kind == "accel" else "cpu"
