"""Random search: uniform over the valid points, without replacement."""
from __future__ import annotations

from .base import Strategy, register_strategy


@register_strategy
class RandomStrategy(Strategy):
    name = "random"

    def propose(self, n: int, measured: set) -> list[dict]:
        return self.space.sample(self.rng, n, exclude=measured)
