"""One design point, evaluated: compile every workload for the point's Config, run it, and
turn the run into records (executor work item: ``evaluate_point(item)``).

    item = make_item(spec, point, cfg, workloads, sources, area_flow)
    records = evaluate_point(item)         # list of result records (results.py)

Per workload: `compile_model` for the Config (the compiler ranks tilings with the cycle
model, or applies a tuning log's best records); a functional-simulator run gives the
output (checked bit for bit against the int8 reference) and the DRAM bytes of every layer;
the cycle model gives each layer's cycles for the tiling the compiler kept; with source
``rtl`` the Verilated core runs the module too (its build cached by fingerprint) and gives
the cycles, checked against the reference as well. A workload that fails to compile or
run becomes an error record; the other workloads of the point still run.
"""
from __future__ import annotations

import dataclasses
import time
import traceback
import warnings

import numpy as np

from vtalab.spec import Config

from .layers import layer_rows, totals
from .results import area_key, make_record
from .spec import DseError, Workload


def make_item(spec, point: dict, cfg: Config, workloads: list, sources: list,
              area_flow: str | None) -> dict:
    """A picklable work item (plain data) for `evaluate_point`."""
    return {"point": point, "config": cfg.to_dict(),
            "workloads": [dataclasses.asdict(w) for w in workloads], "sources": list(sources),
            "area": None if area_flow is None else {"flow": area_flow, "board": spec.board},
            "check": spec.check, "tuning_log": spec.tuning_log}


def evaluate_point(item: dict) -> list[dict]:
    cfg = Config(**item["config"])
    point = item["point"]
    records = []
    if item["area"] is not None:
        records.append(_area_record(point, cfg, **item["area"]))
    for wl in item["workloads"]:
        records += evaluate_workload(point, cfg, Workload(**wl), item["sources"],
                                     item["check"], item["tuning_log"])
    return records


def _area_record(point: dict, cfg: Config, flow: str, board: str) -> dict:
    from .area import area_metrics
    start = time.perf_counter()
    try:
        metrics, error = area_metrics(cfg, board, flow), None
    except Exception as exc:  # an error record, not a lost point
        metrics, error = {"board": board}, _error_text(exc)
    return make_record("area", point, cfg, area_key(board), flow, error, metrics,
                       timing={"area_s": round(time.perf_counter() - start, 3)})


def _error_text(exc: BaseException) -> str:
    return traceback.format_exception_only(type(exc), exc)[-1].strip()[:2000]


def evaluate_workload(point: dict, cfg: Config, wl: Workload, sources: list,
                      check: bool = True, tuning_log: str | None = None) -> list[dict]:
    """Records of one workload on one point, one per source ("model", "rtl")."""
    timing: dict = {}
    try:
        module, x = _compile(cfg, wl, tuning_log, timing)
        fsim = _run(module, x, "fsim", check, timing)
        rtl = _run(module, x, "rtl", check, timing) if "rtl" in sources else None
        rows = layer_rows(module, fsim, rtl)
    except Exception as exc:
        return [make_record("workload", point, cfg, wl.key, s, _error_text(exc),
                            timing=timing) for s in sources]
    out = []
    for source in sources:
        metrics = totals(rows, cfg, source)
        metrics["tuning"] = _tuning(module)
        error = None if "cycles" in metrics else \
            "no layer of this workload runs on the accelerator for this config"
        out.append(make_record("workload", point, cfg, wl.key, source, error, metrics,
                               rows, timing))
    return out


def _compile(cfg: Config, wl: Workload, tuning_log, timing: dict):
    from vtalab.compiler.exec import compile_model
    from .workloads import load_workload
    graph, calibration, x = load_workload(wl)
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")        # untuned tasks: counted in metrics.tuning
        module = compile_model(graph, cfg, calibration=calibration, tuning_log=tuning_log)
    timing["compile_s"] = round(time.perf_counter() - start, 3)
    return module, x


def _tuning(module) -> dict:
    tuning = module.stats.get("tuning")
    if tuning is None:
        return {"log": None}
    return {"log": tuning["log"], "tuned": len(tuning["used"]),
            "untuned": len(tuning["untuned"])}


_REFERENCES: dict = {}


def _run(module, x, backend: str, check: bool, timing: dict):
    from vtalab.compiler.exec.runner import _dram_need
    from vtalab.runtime import open_device
    start = time.perf_counter()
    with open_device(backend, module.cfg, dram_bytes=_dram_need(module)) as dev:
        outs, profile = module.run(x, device=dev)
    timing[f"{backend}_s"] = round(time.perf_counter() - start, 3)
    if check:
        start = time.perf_counter()
        _check(module, x, outs, backend)
        timing[f"{backend}_check_s"] = round(time.perf_counter() - start, 3)
    return profile


def _check(module, x, outs: dict, backend: str) -> None:
    """Outputs must equal the int8 reference of the compiled graph, bit for bit."""
    from vtalab.compiler.graph import run_int8
    ref = run_int8(module.graph, x)
    for name in module.outputs:
        got, want = np.asarray(outs[name]), np.asarray(ref[name])
        if got.shape != want.shape or not np.array_equal(got, want):
            bad = int(np.sum(got != want)) if got.shape == want.shape else got.size
            raise DseError(f"{backend} output {name} must equal the int8 reference, not "
                           f"differ in {bad} of {want.size} values")
