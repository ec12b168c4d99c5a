"""Vectorised expression evaluation (codegen's pad masks) against the scalar evaluator."""
import numpy as np
from hypothesis import given, settings, strategies as st

from vtalab.compiler.ir import Var, const
from vtalab.compiler.ir.arith import compiled, compiled_vector
from vtalab.compiler.ir.expr import cast, max_expr, min_expr, select

Y, X, K = Var("y"), Var("x"), Var("k")


@st.composite
def int_exprs(draw, depth=3):
    if depth == 0 or draw(st.integers(0, 3)) == 0:
        return draw(st.sampled_from([Y, X, K, const(draw(st.integers(-7, 9)))]))
    a, b = draw(int_exprs(depth=depth - 1)), draw(int_exprs(depth=depth - 1))
    op = draw(st.sampled_from(["+", "-", "*", "//", "%", "min", "max", "select"]))
    if op == "select":
        return select(draw(bool_exprs(depth=depth - 1)), a, b)
    if op in ("min", "max"):
        return (min_expr if op == "min" else max_expr)(a, b)
    if op in ("//", "%"):          # divide by a positive constant (no zero division)
        c = const(draw(st.integers(1, 5)))
        return a // c if op == "//" else a % c
    return {"+": a + b, "-": a - b, "*": a * b}[op]


@st.composite
def bool_exprs(draw, depth=3):
    a, b = draw(int_exprs(depth=max(depth - 1, 0))), draw(int_exprs(depth=max(depth - 1, 0)))
    base = draw(st.sampled_from([a < b, a >= b, a.equal(b), a <= b]))
    if depth == 0 or draw(st.booleans()):
        return base
    other = draw(bool_exprs(depth=depth - 1))
    return draw(st.sampled_from([base & other, base | other, ~base]))


@settings(max_examples=200, deadline=None)
@given(e=bool_exprs(), k=st.integers(-3, 3))
def test_vectorised_condition_matches_scalar_evaluation(e, k):
    fn = compiled_vector(e)
    assert fn is not None
    got = np.broadcast_to(fn({Y: np.arange(4)[:, None], X: np.arange(5)[None, :], K: k}),
                          (4, 5))
    scalar = compiled(e)
    want = np.array([[bool(scalar({Y: y, X: x, K: k})) for x in range(5)] for y in range(4)])
    np.testing.assert_array_equal(got, want)


def test_casts_do_not_vectorise():
    assert compiled_vector(cast("int8", Y) < const(3, "int8")) is None
