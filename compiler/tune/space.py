"""Search spaces as data: knobs (splits, choices, booleans) and constraints.

    space = Space([Split("h", 56, parts=2), Choice("vthreads", [1, 2, 4]), Bool("unroll")],
                  constraints=[("fits the SRAMs", lambda p: fits(p))])
    space.points()           # every valid point (a dict knob name -> value), in index order
    space.sample(rng, 8)     # distinct valid points at random
    space.neighbor(p, rng)   # p with one knob changed (valid), for simulated annealing
    space.encode(p)          # numeric knob features, deterministic

A point is a plain dict of JSON values (tuples are stored as lists), so it goes into the
tuning log as it is. A template declares its space; the tuner knows no template by name.
"""
from __future__ import annotations

import itertools
import json
import math
from dataclasses import dataclass, field

import numpy as np

from ..errors import CompileError


def factorizations(extent: int, parts: int) -> list[tuple]:
    """Every ordered tuple of ``parts`` positive ints whose product is ``extent``."""
    if parts == 1:
        return [(extent,)]
    out = []
    for d in range(1, extent + 1):
        if extent % d == 0:
            out.extend((d,) + rest for rest in factorizations(extent // d, parts - 1))
    return out


@dataclass(frozen=True)
class Knob:
    name: str
    values: tuple

    def __post_init__(self):
        if not self.values:
            raise CompileError(f"knob {self.name} must have at least one value, not none")

    def index(self, value) -> int:
        v = tuple(value) if isinstance(value, list) else value
        try:
            return self.values.index(v)
        except ValueError:
            raise CompileError(f"knob {self.name} must be one of {list(self.values)[:8]}..., "
                               f"not {value!r}") from None

    def encode(self, value) -> list[float]:
        """Numeric features of a value: the value itself where it is a number (log2 for
        sizes), else a one-hot over the choices."""
        if all(isinstance(v, bool) for v in self.values):
            return [float(bool(value))]
        if all(isinstance(v, (int, float)) for v in self.values):
            return [math.log2(max(float(value), 1e-9)) if min(self.values) > 0 else float(value)]
        i = self.index(value)
        return [float(i == k) for k in range(len(self.values))]

    def feature_names(self) -> list[str]:
        if all(isinstance(v, (int, float)) for v in self.values):
            return [self.name]
        return [f"{self.name}={v}" for v in self.values]


class Split(Knob):
    """The factors of an axis of ``extent`` into ``parts`` loops (outermost first)."""

    def __init__(self, name: str, extent: int, parts: int = 2, max_inner: int | None = None):
        values = [f for f in factorizations(extent, parts)
                  if max_inner is None or f[-1] <= max_inner]
        super().__init__(name, tuple(values))

    def encode(self, value) -> list[float]:
        return [math.log2(f) for f in value]

    def feature_names(self) -> list[str]:
        return [f"{self.name}.{k}" for k in range(len(self.values[0]))]


class Choice(Knob):
    def __init__(self, name: str, values):
        super().__init__(name, tuple(values))


class Bool(Knob):
    def __init__(self, name: str):
        super().__init__(name, (False, True))


def _jsonable(value):
    return list(value) if isinstance(value, tuple) else value


def point_key(point: dict) -> str:
    """A canonical string of a point (the tuning log's knobs key)."""
    return json.dumps({k: _jsonable(v) for k, v in point.items()}, sort_keys=True)


@dataclass
class Space:
    knobs: list
    constraints: list = field(default_factory=list)     # (description, fn(point) -> bool)

    def __post_init__(self):
        names = [k.name for k in self.knobs]
        if len(set(names)) != len(names):
            raise CompileError(f"knob names must be unique, not {names}")
        self._radix = [len(k.values) for k in self.knobs]
        self._valid_cache: list | None = None

    @property
    def raw_size(self) -> int:
        return math.prod(self._radix)

    def point(self, index: int) -> dict:
        """The point at a mixed-radix ``index`` (last knob fastest), valid or not."""
        out = {}
        for knob, r in zip(reversed(self.knobs), reversed(self._radix)):
            index, i = divmod(index, r)
            out[knob.name] = _jsonable(knob.values[i])
        return {k.name: out[k.name] for k in self.knobs}

    def index(self, point: dict) -> int:
        index = 0
        for knob, r in zip(self.knobs, self._radix):
            index = index * r + knob.index(point[knob.name])
        return index

    def violation(self, point: dict) -> str | None:
        """What is wrong with the point (knobs missing or unknown, a value not in its knob,
        the first constraint it breaks), or None."""
        names = [k.name for k in self.knobs]
        if sorted(point) != sorted(names):
            return f"knobs must be {names}, not {sorted(point)}"
        for knob in self.knobs:
            v = point[knob.name]
            if (tuple(v) if isinstance(v, list) else v) not in knob.values:
                return f"knob {knob.name} must be one of its values, not {v!r}"
        for what, fn in self.constraints:
            if not fn(point):
                return what
        return None

    def valid(self, point: dict) -> bool:
        return self.violation(point) is None

    def points(self) -> list[dict]:
        """Every valid point in index order (cached; spaces are enumerable up to ~1e6)."""
        if self._valid_cache is None:
            if self.raw_size > 2_000_000:
                raise CompileError(f"space size must be at most 2000000 to enumerate, not "
                                   f"{self.raw_size}; sample it instead")
            self._valid_cache = [p for p in map(self.point, range(self.raw_size))
                                 if self.valid(p)]
        return self._valid_cache

    def __len__(self) -> int:
        return len(self.points())

    def sample(self, rng: np.random.Generator, n: int, exclude=()) -> list[dict]:
        """Up to ``n`` distinct valid points not in ``exclude`` (point keys), at random."""
        skip = set(exclude)
        pool = [p for p in self.points() if point_key(p) not in skip]
        if len(pool) <= n:
            picks = rng.permutation(len(pool))
        else:
            picks = rng.choice(len(pool), size=n, replace=False)
        return [pool[i] for i in picks]

    def neighbor(self, point: dict, rng: np.random.Generator, tries: int = 32) -> dict:
        """A valid point differing in one knob (a random knob, a random other value)."""
        for _ in range(tries):
            knob = self.knobs[rng.integers(len(self.knobs))]
            if len(knob.values) < 2:
                continue
            new = dict(point)
            new[knob.name] = _jsonable(knob.values[rng.integers(len(knob.values))])
            if new != point and self.valid(new):
                return new
        return point

    def encode(self, point: dict) -> np.ndarray:
        return np.array([x for k in self.knobs for x in k.encode(point[k.name])], np.float64)

    def feature_names(self) -> list[str]:
        return [n for k in self.knobs for n in k.feature_names()]

    def grid(self) -> list[dict]:
        return list(self.points())


def product_points(choices: dict) -> list[dict]:
    """Every combination of a {name: values} dict (a helper for small test spaces)."""
    names = list(choices)
    return [dict(zip(names, combo)) for combo in itertools.product(*choices.values())]
