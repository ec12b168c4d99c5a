"""The worker side of running Programs on a pool of simulator processes.

A worker process opens one device per (config, DRAM size) and keeps it; each item is one
Program with its inputs and the outputs it must produce (compiler/exec/parallel.py sends
a model's accelerator steps). This module imports only the runtime, so a spawned worker is
ready in a fraction of the time the compiler's imports would take.
"""
from __future__ import annotations

import numpy as np

_DEVICES: dict = {}


def worker_device(backend: str, cfg, dram_bytes: int):
    """This worker's device for ``cfg``, opened once."""
    from .device import open_device
    key = (backend, cfg.fingerprint(), dram_bytes)
    if key not in _DEVICES:
        # the programs passed the runtime's validator on the functional-simulator run
        _DEVICES[key] = open_device(backend, cfg, dram_bytes=dram_bytes, validate=False)
    return _DEVICES[key]


def warm_device(backend: str, cfg, dram_bytes: int) -> None:
    """Pool initializer: open the device early; a failure is left for :func:`run_checked`
    to report with its message (a failing initializer would only break the pool)."""
    try:
        worker_device(backend, cfg, dram_bytes)
    except Exception:
        pass


def run_checked(item):
    """(backend, config, program, inputs, expected outputs, DRAM bytes) -> (counters,
    mismatch or None): the Program run with ``inputs``, its outputs compared bit for bit."""
    backend, cfg, program, inputs, expected, dram_bytes = item
    outputs, counters = program.run_io(worker_device(backend, cfg, dram_bytes), inputs)
    for name, want in expected.items():
        got = outputs[name]
        if not np.array_equal(got, want):
            bad = int(np.count_nonzero(got != want))
            return dict(counters), (f"{program.name}: {bad} of {want.size} values of {name} "
                                    f"differ from the functional simulator's")
    return dict(counters), None
