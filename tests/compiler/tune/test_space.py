"""compiler/tune/space.py: knobs, constraints, enumeration, sampling, neighbours."""
import numpy as np
import pytest

from vtalab.compiler.errors import CompileError
from vtalab.compiler.tune.space import Bool, Choice, Space, Split, factorizations, point_key


def test_split_values_are_every_factorization():
    assert factorizations(12, 2) == [(1, 12), (2, 6), (3, 4), (4, 3), (6, 2), (12, 1)]
    assert all(a * b * c == 8 for a, b, c in Split("x", 8, 3).values)
    assert len(Split("x", 8, 3).values) == 10
    assert Split("x", 16, max_inner=4).values == ((4, 4), (8, 2), (16, 1))


def test_points_respect_constraints_and_round_trip():
    space = Space([Split("t", 8), Choice("v", [1, 2, 4]), Bool("u")],
                  [("t*v <= 8", lambda p: p["t"][1] * p["v"] <= 8)])
    assert space.raw_size == 4 * 3 * 2
    pts = space.points()
    assert all(p["t"][1] * p["v"] <= 8 for p in pts)
    assert len(pts) == 2 * (4 + 3 + 2)          # v=1: 4 tiles, v=2: 3, v=4: 2
    for p in pts:
        assert space.point(space.index(p)) == p
    assert space.violation({"t": [1, 8], "v": 4, "u": True}) == "t*v <= 8"
    assert pts == space.points()                  # deterministic order


def test_sample_neighbor_and_encode():
    space = Space([Split("t", 64), Choice("v", [1, 2, 4]), Bool("u")])
    rng = np.random.default_rng(1)
    some = space.sample(rng, 10)
    keys = {point_key(p) for p in some}
    assert len(keys) == 10
    rest = space.sample(rng, 1000, exclude=keys)
    assert len(rest) == len(space) - 10 and not keys & {point_key(p) for p in rest}
    p = some[0]
    n = space.neighbor(p, rng)
    assert sum(n[k] != p[k] for k in p) == 1 and space.valid(n)
    enc = space.encode({"t": [8, 8], "v": 2, "u": True})
    assert enc.tolist() == [3.0, 3.0, 1.0, 1.0]
    assert space.feature_names() == ["t.0", "t.1", "v", "u"]


def test_bad_knob_values_are_named():
    space = Space([Choice("v", [1, 2])])
    with pytest.raises(CompileError, match="knob v must be one of"):
        space.index({"v": 3})
    with pytest.raises(CompileError, match="knob names must be unique"):
        Space([Choice("v", [1]), Bool("v")])
