"""Search strategies behind one interface (base.py); a new strategy is one file here.

    strategy = get_strategy("xgb", task, seed=0, model=CostModel(...), history=[...])
    points = strategy.propose(8, measured)      # unmeasured points, best guess first
    strategy.observe([(point, cost or None), ...])
"""
from .base import Strategy, get_strategy, register_strategy, strategy_names  # noqa: F401
from . import grid, random_search, sa  # noqa: F401  (register themselves)
