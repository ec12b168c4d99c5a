"""The vectorised exp polynomial (llvm/intrinsics.py) against float64 numpy."""
import numpy as np

from vtalab.compiler import te
from vtalab.compiler.llvm import build
from vtalab.compiler.target import Target
from vtalab.compiler.te.build import lower_schedule

HOST = Target.host(threads=1)
MAX_REL_ERR = 2.5e-7          # measured 1.9e-7 (2.7 ulp) over [-87.3, 88.3]


def _exp_kernel(n, lanes):
    x = te.placeholder((n,), "float32", "x")
    y = te.compute((n,), lambda i: te.call("exp", x[i]), name="y")
    s = te.create_schedule(y)
    if lanes > 1:
        s[y].vectorize(s[y].split(s[y].leaf_iter_vars[0], lanes)[1])
    return build(lower_schedule(s, [x, y], f"exp{lanes}"), HOST)


def _run(kernel, xs):
    out = np.empty_like(xs)
    kernel(xs, out)
    return out


def test_exp_relative_error_over_the_normal_range():
    rng = np.random.default_rng(5)
    xs = np.concatenate([np.linspace(-87.3, 88.3, 400_000, dtype="float32"),
                         rng.uniform(-1, 1, 100_000).astype("float32"),
                         (rng.standard_normal(100_000) * 20).clip(-87.3, 88.3).astype("float32")])
    xs = xs[:len(xs) // 16 * 16]
    for lanes in (16, 1):                         # vector and scalar code paths
        got = _run(_exp_kernel(len(xs), lanes), xs).astype(np.float64)
        rel = np.abs(got / np.exp(xs.astype(np.float64)) - 1)
        assert rel.max() <= MAX_REL_ERR, (lanes, rel.max(), xs[rel.argmax()])


def test_exp_edges():
    xs = np.array([0, -0.0, -np.inf, np.inf, np.nan, -200, -88.5, 89, 1e30, -1e-30,
                   1e-30, 88.3, -87.3, 1, -1, 2], "float32")
    got = _run(_exp_kernel(len(xs), 16), xs)
    assert got[0] == 1 and got[1] == 1 and got[9] == 1 and got[10] == 1
    assert got[2] == 0 and got[5] == 0 and got[6] == 0
    assert np.isposinf(got[3]) and np.isposinf(got[7]) and np.isposinf(got[8])
    assert np.isnan(got[4])
    np.testing.assert_allclose(got[11:], np.exp(xs[11:].astype(np.float64)), rtol=MAX_REL_ERR)
