"""Grid search: the valid points in the space's index order."""
from __future__ import annotations

from .base import Strategy, register_strategy


@register_strategy
class GridStrategy(Strategy):
    name = "grid"

    def propose(self, n: int, measured: set) -> list[dict]:
        return self.fresh(self.space.points(), measured, n)
