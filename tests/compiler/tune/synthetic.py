"""A synthetic template and measurer for tuner tests: a known optimum, no compiler."""
from __future__ import annotations

import numpy as np

from vtalab.compiler.tune.measure import MeasureResult, Measurer, register_measurer
from vtalab.compiler.tune.space import Bool, Choice, Space, Split
from vtalab.compiler.tune.task import Task, Template, register


class Synthetic(Template):
    """cost = (log2 tile - 3)^2 * 40 + (unroll? 0 : 25) + |lanes - 8| * 7 + 100.
    Optimum: tile 8, unroll, lanes 8 -> 100. A constraint removes tile 64 with lanes 16."""
    name, kind, unit = "test.synthetic", "cpu", "cycles"

    def target_key(self, cfg) -> str:
        return "synthetic"

    def space(self, task: Task) -> Space:
        n = task.args["extent"]
        return Space([Split("tile", n), Choice("lanes", [1, 2, 4, 8, 16]), Bool("unroll")],
                     [("no 64-tile with 16 lanes",
                       lambda p: not (p["tile"][1] == 64 and p["lanes"] == 16))])

    def cost(self, task, p) -> float:
        t = p["tile"][1]
        return (np.log2(t) - 3) ** 2 * 40 + (0 if p["unroll"] else 25) \
            + abs(p["lanes"] - 8) * 7 + 100

    def features(self, task, p) -> dict:
        return {}

    def default(self, task):
        return self.space(task).points()[0]


@register_measurer
class SyntheticMeasure(Measurer):
    name, kinds = "synthetic", ("cpu",)

    def _measure(self, task, point) -> MeasureResult:
        if point.get("lanes") == 2 and point["tile"][1] == 2:
            return MeasureResult(None, "wrong result: synthetic failure")
        return MeasureResult(task.impl.cost(task, point))


SYNTHETIC = register(Synthetic())


def synthetic_task(extent: int = 256) -> Task:
    return Task.make(SYNTHETIC.name, {"extent": extent})
