"""The learned cost model: XGBoost ``rank:pairwise`` on loop-IR and knob features.

    model = CostModel(template)
    model.fit(samples)                  # [(task, point, cost or None)], any tasks
    scores = model.predict(task, points)   # higher = predicted faster

One model per template, trained on every measured task of that template (a model trained
on some ResNet layers ranks a new layer: features are per-loop quantities, not task
ids). Pairs are formed within a task only (``qid`` = task), so tasks of very different
sizes do not compete. Relevance: best cost of the task / cost (failed trials 0). The
template's analytic prior, where it has one, is one more feature (log2 of predicted
cost) and ranks the candidates alone until there is something to learn from.
Features are cached per (task, point): they are deterministic.
"""
from __future__ import annotations

import math

import numpy as np

from ..errors import CompileError

RELEVANCE_LEVELS = 64


class FeatureCache:
    def __init__(self):
        self._rows: dict = {}

    def row(self, task, point: dict, use_prior: bool) -> np.ndarray:
        from .space import point_key
        key = (task.key, task.target, point_key(point), use_prior)
        row = self._rows.get(key)
        if row is None:
            row = _feature_row(task, point, use_prior)
            self._rows[key] = row
        return row

    def matrix(self, task, points, use_prior: bool) -> np.ndarray:
        return np.stack([self.row(task, p, use_prior) for p in points])


def _feature_row(task, point: dict, use_prior: bool) -> np.ndarray:
    from .features import to_vector
    tpl = task.impl
    loop = tpl.features(task, point)
    parts = [to_vector(loop) if loop else np.zeros(0), tpl.space(task).encode(point)]
    if use_prior:
        prior = tpl.prior(task, point)
        parts.append(np.array([math.log2(max(prior, 1.0)) if prior is not None else 0.0]))
    return np.concatenate(parts).astype(np.float32)


def model_key(task) -> tuple:
    """Tasks that can share a model: same template and the same knob features (a template
    may give workloads of different kinds different knobs, e.g. global vs windowed pools)."""
    return task.template, tuple(task.impl.space(task).feature_names())


def relevance(costs: list) -> np.ndarray:
    """Integer relevance per trial of one task: 0 for failures, up to RELEVANCE_LEVELS-1
    for the best (proportional to best / cost)."""
    ok = [c for c in costs if c is not None]
    if not ok:
        return np.zeros(len(costs), np.int32)
    best = min(ok)
    return np.array([0 if c is None else max(1, round((RELEVANCE_LEVELS - 1) * best / c))
                     for c in costs], np.int32)


SHARED_FEATURES = FeatureCache()     # features are deterministic: one cache per process


class CostModel:
    def __init__(self, template, use_prior: bool = True, seed: int = 0, rounds: int = 80,
                 cache: FeatureCache | None = None):
        self.template = template
        self.use_prior = use_prior
        self.seed = seed
        self.rounds = rounds
        self.cache = cache or SHARED_FEATURES
        self.booster = None
        self.trained_on = 0

    def fit(self, samples: list) -> bool:
        """Train on (task, point, cost|None) samples; False if there are no pairs yet."""
        groups: dict = {}
        for task, point, cost in samples:
            groups.setdefault((task.key, task.target), (task, []))[1].append((point, cost))
        xs, ys, qids = [], [], []
        for q, (task, rows) in enumerate(groups.values()):
            rel = relevance([c for _, c in rows])
            if len(set(rel.tolist())) < 2:
                continue                 # no ordered pair in this task
            xs.append(self.cache.matrix(task, [p for p, _ in rows], self.use_prior))
            ys.append(rel)
            qids.append(np.full(len(rows), q, np.int32))
        if not xs:
            return False
        try:
            import xgboost as xgb
        except ImportError as exc:
            raise CompileError("the XGBoost cost model must have xgboost installed "
                               "(pip install 'vtalab[tune]'), not missing") from exc
        dtrain = xgb.DMatrix(np.concatenate(xs), label=np.concatenate(ys), nthread=1)
        dtrain.set_group([len(y) for y in ys])
        params = {"objective": "rank:pairwise", "max_depth": 6, "eta": 0.2, "gamma": 1e-4,
                  "min_child_weight": 1, "subsample": 1.0, "seed": self.seed,
                  "nthread": 1, "verbosity": 0}
        self.booster = xgb.train(params, dtrain, num_boost_round=self.rounds)
        self.trained_on = int(sum(len(y) for y in ys))
        return True

    def predict(self, task, points: list) -> np.ndarray:
        """Scores (higher = predicted better); before training: -prior, else zeros."""
        if not points:
            return np.zeros(0)
        if self.booster is None:
            return self.prior_scores(task, points)
        return self.booster.inplace_predict(self.cache.matrix(task, points, self.use_prior))

    def prior_scores(self, task, points: list) -> np.ndarray:
        tpl = task.impl
        if not self.use_prior:
            return np.zeros(len(points))
        priors = [tpl.prior(task, p) for p in points]
        if any(p is None for p in priors):
            return np.zeros(len(points))
        return -np.log2(np.maximum(np.array(priors, np.float64), 1.0))
