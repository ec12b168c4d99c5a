"""Design points: Config variants of the spec's base, enumerated, sampled or searched.

    plan = plan_points(spec)          # Plan(points to run, rejected points with the reason)
    search = ConfigSearch(spec)       # model-guided: propose(n, measured) / observe(...)

A point is the dict of swept fields (``{"block_in": 16, "bus_bits": 128}``); its Config is
the base with those fields replaced (``out_depth`` follows ``acc_depth`` unless it is swept
too: the hardware needs them equal). A point whose Config is impossible is rejected with
the ConfigError text; one that breaks a constraint (fits the board, DSP/BRAM limits from
the resource estimate) with the ResourceError or limit text. Random and model-guided
search run the autotuner's strategies on a ``dse.config`` template whose knobs are the
swept fields, so the XGBoost ranking and simulated annealing of compiler/tune drive it.
"""
from __future__ import annotations

import itertools
import json
from dataclasses import dataclass, field
from functools import lru_cache

from vtalab.compiler.tune import templates as _accel_templates  # noqa: F401 (registry first)
from vtalab.compiler.tune.space import Choice, Space, point_key
from vtalab.compiler.tune.task import Task, Template, register
from vtalab.spec import Config
from vtalab.spec.errors import VtaError

from .spec import DseError, DseSpec

ABBREV = {"batch": "n", "inp_bits": "ib", "wgt_bits": "wb", "acc_bits": "ab",
          "out_bits": "ob", "uop_depth": "uop", "inp_depth": "inp", "wgt_depth": "wgt",
          "acc_depth": "acc", "out_depth": "out", "bus_bits": "bus", "clock_mhz": "mhz"}


def make_config(spec: DseSpec, point: dict) -> Config:
    """The point's Config (raises ConfigError naming the parameter)."""
    values = spec.base.hardware_dict()
    values.update(point)
    if "acc_depth" in point and "out_depth" not in spec.sweep:
        values["out_depth"] = point["acc_depth"]
    return Config(**values, name=label(point, values))


def label(point: dict, values: dict | None = None) -> str:
    """A short readable name: the array shape, then the other swept fields."""
    values = values or point
    shape = f"{values.get('batch', '?')}x{values.get('block_in', '?')}x" \
            f"{values.get('block_out', '?')}"
    return " ".join([shape] + [f"{ABBREV[k]}{point[k]:g}" for k in point
                               if k in ABBREV and k != "batch"])


def violation(spec: DseSpec, cfg: Config) -> str | None:
    """The first constraint ``cfg`` breaks (resource estimate of the spec's board), or None."""
    from vtalab.fpga.resources import check_fits, estimate
    cons = spec.constraints
    if cons.get("fits_board"):
        try:
            check_fits(cfg, spec.board)
        except VtaError as exc:
            return str(exc)
    if "max_dsp" in cons or "max_bram" in cons:
        est = estimate(cfg, spec.board)
        for key, used in (("max_dsp", est.dsp), ("max_bram", est.bram)):
            if key in cons and used > cons[key]:
                return (f"estimated {key[4:].upper()}s must be at most {cons[key]} "
                        f"(constraints.{key}), not {used}")
    return None


def check_point(spec: DseSpec, point: dict) -> tuple[Config | None, str | None]:
    """(Config, None) for a runnable point, else (Config or None, why not)."""
    try:
        cfg = make_config(spec, point)
    except VtaError as exc:
        return None, f"{type(exc).__name__}: {exc}"
    why = violation(spec, cfg)
    return cfg, (f"constraint: {why}" if why else None)


@dataclass
class Plan:
    points: list = field(default_factory=list)       # (point, Config), to run
    rejected: list = field(default_factory=list)     # (point, Config | None, reason)


def grid_points(spec: DseSpec) -> list[dict]:
    keys = list(spec.sweep)
    return [dict(zip(keys, combo)) for combo in itertools.product(*spec.sweep.values())]


def plan_points(spec: DseSpec) -> Plan:
    """Every grid point checked; grid: all runnable ones (at most the budget), random: a
    seeded sample of ``budget`` runnable ones. Model-guided search plans as it goes."""
    plan = Plan()
    for point in grid_points(spec):
        cfg, why = check_point(spec, point)
        if why:
            plan.rejected.append((point, cfg, why))
        else:
            plan.points.append((point, cfg))
    if spec.strategy == "grid" and len(plan.points) > spec.budget:
        raise DseError(f"search.budget must be at least the {len(plan.points)} runnable grid "
                       f"points, not {spec.budget} (raise it, or use strategy \"random\" or "
                       f"\"xgb\")")
    if spec.strategy == "random":
        search = ConfigSearch(spec, "random")
        chosen = {point_key(p) for p in search.propose(spec.budget, set())}
        plan.points = [(p, c) for p, c in plan.points if point_key(p) in chosen]
    return plan


def rtl_sample(spec: DseSpec, points: list) -> set:
    """Keys of the points also measured on RTL: ``rtl_sample`` of them spread evenly over
    the list (every point when the cycles come from RTL anyway)."""
    n = spec.rtl_sample
    if not n or not points:
        return set()
    step = len(points) / min(n, len(points))
    return {point_key(points[int(i * step)]) for i in range(min(n, len(points)))}


class ConfigTemplate(Template):
    """The swept Config fields as knobs (a `Choice` each), the runnable points as the
    space. ``prior``: the objective with ideal compute only (MACs per cycle, the clock,
    the estimated DSPs), the cold-start ranking until measured points train the model."""
    name, kind, unit = "dse.config", "accel", "cycles"

    @staticmethod
    def spec_of(task: Task) -> DseSpec:
        return _SPECS[task.args["spec"]]

    @lru_cache(maxsize=16)
    def space(self, task: Task) -> Space:
        spec = self.spec_of(task)
        knobs = [Choice(k, v) for k, v in spec.sweep.items()]
        return Space(knobs, [("a valid config within the constraints",
                              lambda p: check_point(spec, p)[1] is None)])

    def prior(self, task: Task, point: dict) -> float | None:
        spec = self.spec_of(task)
        cfg, why = check_point(spec, point)
        if why:
            return None
        return objective_prior(spec, cfg)

    def describe(self, task: Task) -> str:
        return f"dse.config {self.spec_of(task).name}"


def objective_prior(spec: DseSpec, cfg: Config) -> float:
    cycles = 1e9 / cfg.macs_per_cycle
    if spec.objective == "cycles":
        return cycles
    latency_us = cycles / cfg.clock_mhz
    if spec.objective == "latency":
        return latency_us
    from vtalab.fpga.resources import estimate
    return latency_us * max(1, estimate(cfg, spec.board).dsp)


CONFIG_TEMPLATE = register(ConfigTemplate())
_SPECS: dict = {}          # spec digest -> DseSpec (a task's workload names its spec)


def config_task(spec: DseSpec) -> Task:
    _SPECS[spec.digest()] = spec
    return Task.make(CONFIG_TEMPLATE.name, {"spec": spec.digest(), "sweep": spec.sweep},
                     spec.base)


class ConfigSearch:
    """The autotuner's strategy (random, grid or xgb) over the Config knobs."""

    def __init__(self, spec: DseSpec, strategy: str | None = None):
        from vtalab.compiler.tune.strategy import get_strategy
        self.spec = spec
        self.task = config_task(spec)
        self.strategy = get_strategy(strategy or spec.strategy, self.task, seed=spec.seed)

    def propose(self, n: int, measured: set) -> list[dict]:
        return self.strategy.propose(n, measured)

    def observe(self, results: list) -> None:
        """``results``: (point, objective value or None) pairs."""
        self.strategy.observe(results)


def point_id(point: dict) -> str:
    return json.dumps(point, sort_keys=True)
