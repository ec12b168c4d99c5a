"""A whole model on the RTL in parallel: each accelerator step on its own simulator run.

    outputs, profile = module.run(x, backend="rtl", jobs=2)

The functional simulator runs the model once, keeping every value; then every accelerator
step's Program runs on one of ``jobs`` RTL worker processes (the autotuner's executor:
spawned workers, each with its own Verilated model) fed with the step's bit-exact inputs
(activations, constants, widened residuals) and checked bit for bit against the
functional simulator's outputs of that step. Steps are independent there, so they are
dispatched longest first. The profile has every step's RTL counters (CPU steps: the
functional-simulator run's host times). For one cycle-exact end-to-end timeline (DMA of
one layer overlapping nothing of the next) use the single-process path (``jobs=1``).
"""
from __future__ import annotations

import time
from functools import partial

import numpy as np

from vtalab.spec.errors import DeviceError

from .profile import Profile, StepRecord

_DEVICES: dict = {}


def _device(cfg, dram_bytes: int):
    """This worker's RTL device for ``cfg``, opened once."""
    from vtalab.runtime import open_device
    key = (cfg.fingerprint(), dram_bytes)
    if key not in _DEVICES:
        # the programs passed the runtime's validator on the functional-simulator run
        _DEVICES[key] = open_device("rtl", cfg, dram_bytes=dram_bytes, validate=False)
    return _DEVICES[key]


def _warm_device(cfg, dram_bytes: int) -> None:
    """Pool initializer: open the device early; a failure is left for ``_rtl_step`` to
    report with its message (a failing initializer would only break the pool)."""
    try:
        _device(cfg, dram_bytes)
    except Exception:
        pass


def _rtl_step(item):
    """Worker: (config, program, inputs, expected outputs, DRAM bytes) -> (counters, error)."""
    cfg, program, inputs, expected, dram_bytes = item
    outputs, counters = program.run_io(_device(cfg, dram_bytes), inputs)
    for name, want in expected.items():
        got = outputs[name]
        if not np.array_equal(got, want):
            bad = int(np.count_nonzero(got != want))
            return dict(counters), (f"{program.name}: {bad} of {want.size} values of {name} "
                                    f"differ from the functional simulator's")
    return dict(counters), None


def _step_item(module, step, values: dict, dram_bytes: int):
    inputs, expected = {}, {}
    for param, (kind, name) in step.bindings.items():
        if kind == "const":
            inputs[param] = module.consts[name]
        elif kind == "scratch":
            residual, _ = step.widen
            inputs[param] = values[residual].astype(np.int32)
        elif name in step.outputs:
            expected[param] = values[name]
        else:
            inputs[param] = values[name]
    return module.cfg, step.kernel, inputs, expected, dram_bytes


def run_parallel_rtl(module, feeds, jobs: int = 2, progress=None):
    """(outputs, Profile) of ``module`` with its accelerator steps on ``jobs`` RTL workers."""
    from vtalab.compiler.tune.executor import LocalExecutor
    from .runner import run_module
    start = time.perf_counter()
    steps = [s for s in module.steps if s.target == "accel"]
    dram = max([s.kernel.dram_bytes() + sum(b.nbytes for b in s.kernel.buffers)
                for s in steps] + [1 << 20]) + (4 << 20)
    order = sorted(range(len(steps)), key=lambda i: -steps[i].info.get("macs", 0))
    records: dict = {}
    with LocalExecutor(jobs=jobs, initializer=partial(_warm_device, module.cfg, dram)) as ex:
        if steps:
            ex.prestart(len(steps))    # the workers start while the fsim runs the model
        values, fsim = run_module(module, feeds, backend="fsim", keep=True)
        items = [_step_item(module, s, values, dram) for s in steps]
        for done, (k, outcome) in enumerate(ex.map(_rtl_step, [items[i] for i in order]), 1):
            step = steps[order[k]]
            if outcome.error is not None:
                raise DeviceError(f"RTL run of step {step.name} must finish, not fail: "
                                  f"{outcome.error}")
            counters, mismatch = outcome.value
            if mismatch:
                raise DeviceError(f"RTL output of step {step.name} must match the functional "
                                  f"simulator bit for bit, not differ ({mismatch})")
            records[step.name] = StepRecord(step.name, step.op, "accel",
                                            step.info.get("macs", 0), counters=counters,
                                            info=step.info)
            if progress:
                progress(done, len(steps), records[step.name])
    profile = Profile(module.cfg, f"rtl x{jobs}")
    for rec in fsim.records:
        profile.add(records.get(rec.name, rec))
    profile.seconds = time.perf_counter() - start
    return {v: values[v] for v in module.outputs}, profile
