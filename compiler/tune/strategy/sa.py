"""Model-guided search: XGBoost ranks, parallel simulated annealing proposes.

AutoTVM's scheme, with its failure modes fixed: persistent walkers carry over between
batches (no cold restart), spaces small enough to score whole are scored whole (exact,
no annealing noise), and a batch is picked for diversity: greedy submodular selection
(predicted rank + a bonus for knob values not yet in the batch) from the best
``plan_size`` candidates, with an epsilon share of random points. The model is retrained
after every batch on all measured trials of the template, this task's and others'
(``history``, shared between tasks: transfer by features).
"""
from __future__ import annotations



import numpy as np

from ..model import CostModel, model_key
from ..space import point_key
from .base import Strategy, register_strategy


@register_strategy
class ModelGuidedStrategy(Strategy):
    name = "xgb"

    def __init__(self, task, seed: int = 0, model: CostModel | None = None,
                 history: list | None = None, walkers: int = 64, steps: int = 150,
                 plan_size: int = 64, epsilon: float = 0.05, diversity: float = 0.5,
                 exhaustive_limit: int = 4096, use_prior: bool = True, **options):
        super().__init__(task, seed, **options)
        self.model = model or CostModel(task.impl, use_prior=use_prior, seed=seed)
        self.history = history if history is not None else []
        self.walkers_n, self.steps, self.plan_size = walkers, steps, plan_size
        self.epsilon, self.diversity = epsilon, diversity
        self.exhaustive_limit = exhaustive_limit
        self.walkers: list | None = None
        self.dirty = True

    def observe(self, results: list) -> None:
        super().observe(results)
        self.history.extend((self.task, p, c) for p, c in results)
        self.dirty = True

    def _retrain(self) -> None:
        if self.dirty:
            mine = model_key(self.task)
            same = [s for s in self.history if model_key(s[0]) == mine]
            self.model.fit(same)
            self.dirty = False

    def propose(self, n: int, measured: set) -> list[dict]:
        self._retrain()
        if self.model.booster is None and not self._has_prior():
            return self.space.sample(self.rng, n, exclude=measured)    # nothing to rank by
        if self.space.raw_size <= self.exhaustive_limit * 8 and \
                len(self.space) <= self.exhaustive_limit:
            plan = self._score_all(measured)
        else:
            plan = self._anneal(measured)
        n_random = int(round(n * self.epsilon)) if self.observed else 0
        picked = self._diverse_pick(plan, n - n_random)
        keys = set(measured) | {point_key(p) for p in picked}
        picked += self.space.sample(self.rng, n - len(picked), exclude=keys)
        return picked

    def _has_prior(self) -> bool:
        tpl = self.task.impl
        return self.model.use_prior and tpl.prior(self.task, tpl.default(self.task)) is not None

    def _score_all(self, measured: set) -> list:
        pool = [p for p in self.space.points() if point_key(p) not in measured]
        scores = self.model.predict(self.task, pool)
        order = np.lexsort((np.arange(len(pool)), -scores))[:self.plan_size]
        return [(float(scores[i]), pool[i]) for i in order]

    def _anneal(self, measured: set) -> list:
        """Parallel SA over the valid points; the best ``plan_size`` unmeasured seen."""
        if self.walkers is None:
            self.walkers = self.space.sample(self.rng, self.walkers_n)
        cur = self.walkers
        cur_s = self.model.predict(self.task, cur)
        best: dict = {}

        def keep(points, scores):
            for p, s in zip(points, scores):
                k = point_key(p)
                if k not in measured:
                    best[k] = (float(s), p)
        keep(cur, cur_s)
        for step in range(self.steps):
            temp = max(1e-3, 1.0 - step / self.steps)
            new = [self.space.neighbor(p, self.rng) for p in cur]
            new_s = self.model.predict(self.task, new)
            accept = self.rng.random(len(cur)) < np.exp(np.minimum(0, new_s - cur_s) / temp)
            cur = [b if a else c for a, b, c in zip(accept, new, cur)]
            cur_s = np.where(accept, new_s, cur_s)
            keep(new, new_s)
        self.walkers = cur
        ranked = sorted(best.values(), key=lambda item: -item[0])
        return ranked[:self.plan_size]

    def _diverse_pick(self, plan: list, n: int) -> list[dict]:
        """Greedy: rank score (1 best .. 0) + diversity x new knob values."""
        if not plan or n <= 0:
            return []
        rank = {id(p): 1 - i / max(1, len(plan) - 1) for i, (_, p) in enumerate(plan)}
        seen: set = set()
        picked, left = [], [p for _, p in plan]
        while left and len(picked) < n:
            def gain(p):
                new = sum((k, point_key({k: v})) not in seen for k, v in p.items())
                return rank[id(p)] + self.diversity * new / max(1, len(p))
            best = max(left, key=gain)
            left.remove(best)
            picked.append(best)
            seen.update((k, point_key({k: v})) for k, v in best.items())
        return picked


