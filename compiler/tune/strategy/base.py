"""The strategy interface and its registry."""
from __future__ import annotations

import numpy as np

from ...errors import CompileError
from ..space import point_key


class Strategy:
    name = ""

    def __init__(self, task, seed: int = 0, **options):
        self.task = task
        self.space = task.impl.space(task)
        self.rng = np.random.default_rng(seed)
        self.options = options
        self.observed: list = []            # (point, cost or None) in order

    def propose(self, n: int, measured: set) -> list[dict]:
        """Up to ``n`` valid points whose keys are not in ``measured``."""
        raise NotImplementedError

    def observe(self, results: list) -> None:
        self.observed.extend(results)

    @staticmethod
    def fresh(points, measured: set, n: int) -> list[dict]:
        out, seen = [], set(measured)
        for p in points:
            k = point_key(p)
            if k not in seen:
                out.append(p)
                seen.add(k)
                if len(out) == n:
                    break
        return out


_STRATEGIES: dict = {}


def register_strategy(cls):
    _STRATEGIES[cls.name] = cls
    return cls


def get_strategy(name: str, task, seed: int = 0, **options) -> Strategy:
    if name not in _STRATEGIES:
        raise CompileError(f"strategy must be one of {sorted(_STRATEGIES)}, not {name!r}")
    return _STRATEGIES[name](task, seed, **options)


def strategy_names() -> list[str]:
    return sorted(_STRATEGIES)
