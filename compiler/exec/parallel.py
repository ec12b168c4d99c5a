"""A whole model on the RTL in parallel: each accelerator step on its own simulator run.

    outputs, profile = module.run(x, backend="rtl", jobs=2)

The functional simulator runs the model once, keeping every value; then every accelerator
step's Program runs on one of ``jobs`` RTL worker processes (the autotuner's executor:
spawned workers, each with its own Verilated model) fed with the step's bit-exact inputs
(activations, constants, widened residuals) and checked bit for bit against the
functional simulator's outputs of that step. Steps are independent there: each is
dispatched as soon as the functional simulator (in a thread) has run it, the longest ready
one first. The profile has every step's RTL counters (CPU steps: the
functional-simulator run's host times). For one cycle-exact end-to-end timeline (DMA of
one layer overlapping nothing of the next) use the single-process path (``jobs=1``).
"""
from __future__ import annotations

import heapq
import threading
import time
from functools import partial

import numpy as np

from vtalab.runtime.step_worker import run_checked, warm_device
from vtalab.spec.errors import DeviceError

from .profile import Profile, StepRecord

def _step_item(module, step, get, dram_bytes: int):
    inputs, expected = {}, {}
    for param, (kind, name) in step.bindings.items():
        if kind == "internal":
            continue
        if kind == "const":
            inputs[param] = module.consts[name]
        elif kind == "scratch":
            residual, _ = step.widen
            inputs[param] = get(residual).astype(np.int32)
        elif name in step.outputs:
            expected[param] = np.array(get(name))
        else:
            inputs[param] = np.array(get(name))
    return "rtl", module.cfg, step.kernel, inputs, expected, dram_bytes


class _ReadySteps:
    """The accelerator steps' items as the functional simulator makes them (in a thread of
    its own); iterating gives the largest ready one first (by MACs), waiting for the next
    while none is ready, so the workers start before the model has run to the end and the
    longest steps still go first once it has."""

    def __init__(self):
        self._cond = threading.Condition()
        self._ready: list = []              # heap of (-macs, step index, item)
        self._finished, self._error = False, None
        self.taken: list[int] = []          # step indices in the order they were given out

    def put(self, macs: int, index: int, item) -> None:
        with self._cond:
            heapq.heappush(self._ready, (-macs, index, item))
            self._cond.notify()

    def finish(self, error: BaseException | None = None) -> None:
        with self._cond:
            self._finished, self._error = True, error
            self._cond.notify()

    def __iter__(self):
        while True:
            with self._cond:
                self._cond.wait_for(lambda: self._ready or self._finished)
                if self._ready:
                    _, index, item = heapq.heappop(self._ready)
                elif self._error is not None:
                    raise self._error
                else:
                    return
            self.taken.append(index)
            yield item


def _run_fsim(module, feeds, ready: _ReadySteps, dram: int, result: dict) -> None:
    """Thread: the model on the functional simulator, each accelerator step handed to
    ``ready`` as soon as it has run."""
    from .runner import run_module
    index = {step.name: k for k, step in enumerate(module.steps) if step.target == "accel"}

    def step_done(step, get):
        if step.name in index:
            ready.put(step.info.get("macs", 0), index[step.name],
                      _step_item(module, step, get, dram))
    try:
        result["values"], result["profile"] = run_module(module, feeds, backend="fsim",
                                                         keep=True, step_done=step_done)
    except BaseException as exc:        # raised again where the items are taken
        ready.finish(exc)
    else:
        ready.finish()


def run_parallel_rtl(module, feeds, jobs: int = 2, progress=None):
    """(outputs, Profile) of ``module`` with its accelerator steps on ``jobs`` RTL workers."""
    from vtalab.compiler.tune.executor import LocalExecutor
    start = time.perf_counter()
    steps = [s for s in module.steps if s.target == "accel"]
    dram = max([s.kernel.dram_bytes() + sum(b.nbytes for b in s.kernel.buffers)
                for s in steps] + [1 << 20]) + (4 << 20)
    records: dict = {}
    ready, fsim = _ReadySteps(), {}
    with LocalExecutor(jobs=jobs, initializer=partial(warm_device, "rtl", module.cfg, dram)) as ex:
        if steps:
            ex.prestart(len(steps))    # the workers start while the fsim runs the model
        thread = threading.Thread(target=_run_fsim, args=(module, feeds, ready, dram, fsim),
                                  name="vtalab-fsim", daemon=True)
        thread.start()
        for done, (k, outcome) in enumerate(ex.map(run_checked, ready), 1):
            step = module.steps[ready.taken[k]]
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
        thread.join()
    profile = Profile(module.cfg, f"rtl x{jobs}")
    for rec in fsim["profile"].records:
        profile.add(records.get(rec.name, rec))
    profile.seconds = time.perf_counter() - start
    return {v: fsim["values"][v] for v in module.outputs}, profile
