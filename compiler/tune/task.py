"""Tuning tasks and the template interface.

A `Task` is one workload of one template on one target: ``Task("accel.conv2d",
{"shape": [...], "epilogue": {...}}, cfg)``. Its ``key`` names the workload (the tuning
log's task key); ``target`` is the Config fingerprint for accelerator tasks and the host
CPU's fingerprint for CPU tasks, so records of another machine or config never apply.

A template (one file under compiler/tune/templates/) implements `Template` and registers
itself; the tuner, the measurers and the cost model reach it only through `template(name)`.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field

import numpy as np

from vtalab.spec import Config

from ..errors import CompileError
from .space import Space


@dataclass(frozen=True)
class Task:
    template: str
    workload: str                     # canonical JSON of the workload arguments
    cfg: Config | None = field(default=None, compare=False)
    target: str = ""                  # config or host fingerprint

    @classmethod
    def make(cls, template: str, workload: dict, cfg: Config | None = None) -> "Task":
        tpl = get_template(template)
        text = json.dumps(workload, sort_keys=True)
        return cls(template, text, cfg, tpl.target_key(cfg))

    @property
    def args(self) -> dict:
        return json.loads(self.workload)

    @property
    def key(self) -> str:
        return f"{self.template}/{self.workload}"

    @property
    def impl(self) -> "Template":
        return get_template(self.template)

    def __str__(self) -> str:
        return self.impl.describe(self)


class Template:
    """What a tunable operator declares. ``unit`` is "cycles" or "seconds"."""
    name = ""
    kind = "accel"            # "accel" (measured on the accelerator) or "cpu"
    unit = "cycles"

    def target_key(self, cfg: Config | None) -> str:
        if cfg is None:
            raise CompileError(f"template {self.name} must be given a Config, not None")
        return cfg.fingerprint()

    def describe(self, task: Task) -> str:
        return task.key

    def space(self, task: Task) -> Space:
        raise NotImplementedError

    def default(self, task: Task) -> dict:
        """The untuned choice (cost model's best or the hand heuristic)."""
        return self.space(task).points()[0]

    def prior(self, task: Task, point: dict) -> float | None:
        """An analytic cost estimate (the cold-start ranking), or None."""
        return None

    def features(self, task: Task, point: dict) -> dict:
        """Numeric features of the lowered loop IR of this point (deterministic)."""
        return {}

    def inputs(self, task: Task, seed: int = 0) -> dict:
        raise NotImplementedError

    def run(self, task: Task, point: dict, inputs: dict, device=None):
        """Run the point; returns (output array, cost or None). ``device``: an accelerator
        Device for accel templates (None: the functional simulator)."""
        raise NotImplementedError

    def reference(self, task: Task, inputs: dict) -> np.ndarray:
        """The expected output for ``inputs`` (independent of the point)."""
        raise NotImplementedError


_TEMPLATES: dict = {}


def register(template: Template) -> Template:
    _TEMPLATES[template.name] = template
    return template


def get_template(name: str) -> Template:
    if not _TEMPLATES:
        from . import templates  # noqa: F401  (registers every template)
    if name not in _TEMPLATES:
        raise CompileError(f"template must be one of {sorted(_TEMPLATES)}, not {name!r}")
    return _TEMPLATES[name]


def all_templates() -> dict:
    if not _TEMPLATES:
        from . import templates  # noqa: F401
    return dict(_TEMPLATES)
