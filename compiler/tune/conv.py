"""Knob search for conv2d: enumerate, rank by the cost model, measure the best few.

    knobs = conv2d_tune(cfg, sh, vthreads=2, measure=fn, log=TuningLog.open(cfg))
    knobs = best_conv2d_knobs(cfg, sh, vthreads=2, log=log)   # no measuring

``measure(knobs) -> cycles`` runs one candidate (on the RTL, see `rtl_measure`); results
go to the tuning log as they come, so a second run measures nothing it has measured
before. Without measurements the cost model's first choice is used. Both are deterministic.
"""
from __future__ import annotations

import dataclasses

import numpy as np

from vtalab.spec import Config

from ..errors import CompileError
from ..topi import Conv2dKnobs, Conv2dShape
from .cost import EpilogueCost, conv2d_candidates
from .log import TuningLog


def workload_key(sh: Conv2dShape, vthreads: int, ep: EpilogueCost = EpilogueCost()) -> str:
    return (f"conv2d/n{sh.batch}c{sh.channels}h{sh.height}w{sh.width}f{sh.filters}"
            f"k{sh.kernel}s{sh.stride}p{sh.pad}/vt{vthreads}/alu{ep.alu_ops}v{ep.vectors}"
            f"r{int(ep.residual)}")


def knobs_dict(kn: Conv2dKnobs) -> dict:
    return dataclasses.asdict(kn)


def conv2d_tune(cfg: Config, sh: Conv2dShape, vthreads: int, measure, log: TuningLog | None,
                ep: EpilogueCost = EpilogueCost(), top: int = 4, progress=None) -> Conv2dKnobs:
    """The fewest-cycle knobs among the cost model's ``top`` candidates, measured."""
    candidates = conv2d_candidates(cfg, sh, vthreads, ep)[:top]
    if not candidates:
        raise CompileError(f"conv2d {sh} must fit the SRAMs with {vthreads} virtual threads "
                           f"on {cfg.name}, not with any tiling")
    key = workload_key(sh, vthreads, ep)
    results = []
    for kn in candidates:
        cycles = log.get(key, knobs_dict(kn)) if log is not None else None
        if cycles is None:
            cycles = int(measure(kn))
            if log is not None:
                log.record(key, knobs_dict(kn), cycles)
        if progress:
            progress(kn, cycles)
        results.append((cycles, candidates.index(kn), kn))
    return min(results)[2]


def best_conv2d_knobs(cfg: Config, sh: Conv2dShape, vthreads: int,
                      ep: EpilogueCost = EpilogueCost(), log: TuningLog | None = None):
    """Measured best from the log where there is one, else the cost model's first choice."""
    if log is not None:
        found = log.best(workload_key(sh, vthreads, ep))
        if found is not None:
            return Conv2dKnobs(**found[0])
    candidates = conv2d_candidates(cfg, sh, vthreads, ep)
    return candidates[0] if candidates else None


def rtl_measure(cfg: Config, sh: Conv2dShape, device, rq=None, check=True):
    """A ``measure`` function: build topi's conv2d with the knobs, run it on ``device``,
    check it against the numpy reference and return the cycle count."""
    from ..topi import Requant, conv2d, conv2d_reference
    from ..vta import build
    from ..vta.program import run_on_device
    rq = rq or Requant(shift=7)

    def measure(kn: Conv2dKnobs) -> int:
        sch, args = conv2d(cfg, sh, rq, kn)
        prog = build(sch, cfg, args)
        rng = np.random.default_rng(0)
        ins = {"data": rng.integers(-128, 128, args[0].shape).astype(np.int8),
               "kernel": rng.integers(-128, 128, args[1].shape).astype(np.int8),
               "bias": rng.integers(-5000, 5000, args[2].shape).astype(np.int32)}
        out = run_on_device(prog, device, ins)["out"]
        if check and not np.array_equal(
                out, conv2d_reference(ins["data"], ins["kernel"], ins["bias"], sh, rq)):
            raise CompileError(f"conv2d {sh} with {kn} must match the numpy reference on "
                               f"{device!r}, not differ")
        measure.last = prog.counters
        return prog.counters["cycles"]
    measure.last = None
    return measure
