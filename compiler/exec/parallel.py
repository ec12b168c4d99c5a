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

from vtalab.runtime.step_worker import run_checked, warm_device
from vtalab.spec.errors import DeviceError

from .profile import Profile, StepRecord

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
    return "rtl", module.cfg, step.kernel, inputs, expected, dram_bytes


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
    with LocalExecutor(jobs=jobs, initializer=partial(warm_device, "rtl", module.cfg, dram)) as ex:
        if steps:
            ex.prestart(len(steps))    # the workers start while the fsim runs the model
        values, fsim = run_module(module, feeds, backend="fsim", keep=True)
        items = [_step_item(module, s, values, dram) for s in steps]
        for done, (k, outcome) in enumerate(ex.map(run_checked, [items[i] for i in order]), 1):
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
