"""LLVM codegen of loop IR against the reference interpreter and numpy."""
import numpy as np
import pytest

from vtalab.compiler import te
from vtalab.compiler.errors import CompileError
from vtalab.compiler.ir import interp
from vtalab.compiler.ir.expr import Var, const
from vtalab.compiler.ir.func import PrimFunc
from vtalab.compiler.ir.stmt import Buffer, For, Store
from vtalab.compiler.llvm import build, chunks, llvm_ir
from vtalab.compiler.target import Target
from vtalab.compiler.te.build import lower_schedule

HOST = Target.host(threads=2)


def _matmul(M, N, K, dtype, schedule):
    acc = "float32" if dtype == "float32" else "int32"
    A = te.placeholder((M, K), dtype, "A")
    B = te.placeholder((K, N), dtype, "B")
    k = te.reduce_axis(K, "k")
    C = te.compute((M, N), lambda i, j: te.sum(A[i, k].astype(acc) * B[k, j].astype(acc),
                                               axis=k), name="C")
    s = te.create_schedule(C)
    schedule(s, C)
    return lower_schedule(s, [A, B, C], "mm")


def _tiled(s, C):
    i, j, k = s[C].leaf_iter_vars
    jo, ji = s[C].split(j, 8)          # 8 does not divide 21: masked vector tail
    io, ii = s[C].split(i, 2)
    s[C].reorder(io, jo, k, ii, ji)
    s[C].unroll(ii)
    s[C].vectorize(ji)
    s[C].parallel(io)


def _cached_local(s, C):
    CL = s.cache_write(C, "local")
    i, j = s[C].leaf_iter_vars
    jo, ji = s[C].split(j, 7)
    s[C].vectorize(ji)
    s[C].parallel(i)
    s[CL].compute_at(s[C], jo)
    li, lj, k = s[CL].leaf_iter_vars
    s[CL].reorder(li, k, lj)
    s[CL].vectorize(lj)


@pytest.mark.parametrize("dtype", ["float32", "int8"])
@pytest.mark.parametrize("schedule", [_tiled, _cached_local])
def test_matmul_matches_interpreter(dtype, schedule):
    rng = np.random.default_rng(1)
    M, N, K = 5, 21, 6
    func = _matmul(M, N, K, dtype, schedule)
    a = rng.integers(-100, 100, (M, K)).astype(dtype)
    b = rng.integers(-100, 100, (K, N)).astype(dtype)
    want = np.zeros((M, N), "float32" if dtype == "float32" else "int32")
    interp.run(func, a, b, want)
    got = np.zeros_like(want)
    kernel = build(func, HOST)
    kernel(a, b, got)
    np.testing.assert_array_equal(got, want)
    got[:] = 0
    kernel(a, b, got, threads=1)
    np.testing.assert_array_equal(got, want)


def test_casts_select_minmax_and_intrinsics():
    x = te.placeholder((37,), "float32", "x")
    y = te.compute((37,), lambda i: te.select(
        x[i] > 0.0, te.call("exp", te.min(x[i], 3.0)), te.call("log", 1.0 - x[i]) + te.max(
            x[i], -0.5)), name="y")
    q = te.compute((37,), lambda i: te.cast("int8", te.max(te.min(y[i] * 40.0, 127.0),
                                                           -128.0)), name="q")
    s = te.create_schedule([y, q])
    for t in (y, q):
        o, v = s[t].split(s[t].leaf_iter_vars[0], 16)
        s[t].vectorize(v)
    func = lower_schedule(s, [x, y, q], "mix")
    xs = np.linspace(-3, 3, 37).astype("float32")
    y_got, q_got = np.zeros(37, "float32"), np.zeros(37, "int8")
    build(func, HOST)(xs, y_got, q_got)
    with np.errstate(divide="ignore", invalid="ignore"):
        want = np.where(xs > 0, np.exp(np.minimum(xs, 3)), np.log(1 - xs) + np.maximum(xs, -0.5))
    np.testing.assert_allclose(y_got, want, rtol=2e-6)
    np.testing.assert_array_equal(q_got, np.trunc(np.clip(y_got * 40, -128, 127)).astype("int8"))


def test_floor_division_and_modulo_of_negative_values():
    i = Var("i")
    out = Buffer("out", (20,), "int32")
    body = For(i, 20, Store(out, (i,), ((i - 10) // 3) * 100 + (i - 10) % 3))
    func = PrimFunc("fdiv", (out,), body, (out,))
    got = np.zeros(20, "int32")
    build(func, HOST)(got)
    ks = np.arange(20) - 10
    np.testing.assert_array_equal(got, (ks // 3) * 100 + ks % 3)


def test_strided_vector_loads_and_scalar_broadcast():
    x = te.placeholder((4, 33), "float32", "x")
    b = te.placeholder((4,), "float32", "b")
    y = te.compute((4, 16), lambda r, j: x[r, 2 * j] + x[r, 2 * j + 1] * b[r], name="y")
    s = te.create_schedule(y)
    s[y].vectorize(s[y].leaf_iter_vars[1])
    func = lower_schedule(s, [x, b, y], "strided")
    assert "shufflevector" in llvm_ir(func, HOST)
    xs = np.arange(4 * 33, dtype="float32").reshape(4, 33)
    bs = np.array([1, 2, 3, 4], "float32")
    got = np.zeros((4, 16), "float32")
    build(func, HOST)(xs, bs, got)
    np.testing.assert_array_equal(got, xs[:, 0:32:2] + xs[:, 1:32:2] * bs[:, None])


def test_object_cache_makes_second_build_a_hit(tmp_path):
    func = _matmul(3, 4, 5, "float32", lambda s, C: None)
    first = build(func, HOST, cache_dir=tmp_path)
    second = build(_matmul(3, 4, 5, "float32", lambda s, C: None), HOST, cache_dir=tmp_path)
    assert not first.cached and second.cached      # same structure, new Var/Buffer uids
    assert not build(_matmul(3, 4, 5, "int8", lambda s, C: None), HOST,
                     cache_dir=tmp_path).cached
    assert not build(_matmul(3, 4, 6, "float32", lambda s, C: None), HOST,
                     cache_dir=tmp_path).cached
    renamed = _matmul(3, 4, 5, "float32", lambda s, C: None)
    renamed = type(renamed)("other", renamed.params, renamed.body, renamed.outputs)
    assert not build(renamed, HOST, cache_dir=tmp_path).cached     # symbols differ
    assert list(tmp_path.rglob("*.o")) and not list(tmp_path.rglob(".tmp-*"))
    a, b = np.ones((3, 5), "float32"), np.ones((5, 4), "float32")
    c = np.zeros((3, 4), "float32")
    second(a, b, c)
    np.testing.assert_array_equal(c, np.full((3, 4), 5.0))
    assert not build(func, HOST, cache_dir=False).cached


def test_wrong_arguments_raise_compile_errors():
    func = _matmul(2, 3, 4, "float32", lambda s, C: None)
    kernel = build(func, HOST)
    a, b, c = np.zeros((2, 4), "float32"), np.zeros((4, 3), "float32"), np.zeros((2, 3), "float32")
    with pytest.raises(CompileError, match="must be float32"):
        kernel(a.astype("float64"), b, c)
    with pytest.raises(CompileError, match="must get 3 arrays"):
        kernel(a, b)
    with pytest.raises(CompileError, match="C-contiguous"):
        kernel(np.zeros((4, 2), "float32").T, b, c)


def test_thread_binding_is_rejected_on_cpu():
    i = Var("i")
    out = Buffer("out", (4,), "int32")
    func = PrimFunc("bound", (out,), For(i, 4, Store(out, (i,), const(1)), "threadIdx.x"))
    with pytest.raises(CompileError, match="bind threads only for cuda"):
        build(func, HOST, cache_dir=False)


def test_chunks_cover_the_range_evenly():
    assert chunks(10, 3) == [(0, 4), (4, 7), (7, 10)]
    assert chunks(2, 8) == [(0, 1), (1, 2)]
    assert chunks(5, 1) == [(0, 5)]


def test_exp_as_intrinsic_or_polynomial_agree():
    x = te.placeholder((40,), "float32", "x")
    y = te.compute((40,), lambda i: te.call("exp", x[i]) + te.call("log", te.call("abs", x[i])),
                   name="y")
    s = te.create_schedule(y)
    o, v = s[y].split(s[y].leaf_iter_vars[0], 8)
    s[y].vectorize(v)
    func = lower_schedule(s, [x, y], "exps")
    assert "llvm.exp" in llvm_ir(func, HOST, fast_exp=False)
    assert "llvm.exp" not in llvm_ir(func, HOST)
    xs = np.linspace(-20, 20, 40).astype("float32")
    want = np.exp(xs) + np.log(np.abs(xs))
    for fast in (True, False):
        got = np.zeros(40, "float32")
        build(func, HOST, fast_exp=fast)(xs, got)
        np.testing.assert_allclose(got, want, rtol=3e-6)


def test_mode_chooser_calibrates_then_keeps_the_faster_and_re_times_the_other():
    from vtalab.compiler.llvm.runtime import EXPLORE, ModeChooser
    chooser = ModeChooser()
    times = {"serial": 2.0, "parallel": 1.0}
    picks = []
    for _ in range(6 + 3 * EXPLORE):
        mode = chooser.pick()
        picks.append(mode)
        chooser.record(mode, times[mode])
    assert picks[:6].count("serial") == 3 and chooser.mode == "parallel"
    assert picks[6:].count("serial") == 3                 # one re-timing per EXPLORE calls
    times["serial"] = 0.5                                 # the load changed
    for _ in range(EXPLORE * 4):
        mode = chooser.pick()
        chooser.record(mode, times[mode])
    assert chooser.mode == "serial"


def test_parallel_regions_run_on_threads_and_pick_a_mode():
    a = te.placeholder((256, 512), "float32", "a")
    s1 = te.compute((256, 512), lambda i, j: a[i, j] * 2.0, name="s1")
    s2 = te.compute((256, 512), lambda i, j: s1[i, j] + a[i, j], name="s2")
    s = te.create_schedule(s2)
    for t in (s1, s2):
        i, j = s[t].leaf_iter_vars
        s[t].parallel(i)
        jo, ji = s[t].split(j, 16)
        s[t].vectorize(ji)
    kernel = build(lower_schedule(s, [a, s2], "two_stage"), HOST)
    assert [r.parallel for r in kernel.plan.regions] == [256, 256]
    assert [b.name for b in kernel.plan.workspaces] == ["s1"]
    x = np.random.default_rng(0).standard_normal((256, 512)).astype("float32")
    for _ in range(8):                  # calibration alternates serial and threaded runs
        out = np.zeros_like(x)
        kernel(x, out, threads=2)
        np.testing.assert_array_equal(out, x * 3)
    chooser = kernel._modes[2]
    assert chooser.mode in ("serial", "parallel")
    assert all(len(v) == 3 for v in chooser.samples.values())


def test_repeated_calls_reuse_pointers_only_for_the_same_arrays():
    a = te.placeholder((4, 8), "float32", "a")
    b = te.compute((4, 8), lambda i, j: a[i, j] * 3.0, name="b")
    kernel = build(lower_schedule(te.create_schedule(b), [a, b], "triple"), HOST)
    x, y = np.ones((4, 8), "float32"), np.zeros((4, 8), "float32")
    for _ in range(3):
        kernel(x, y)
    np.testing.assert_array_equal(y, 3)
    x2, y2 = np.full((4, 8), 2, "float32"), np.zeros((4, 8), "float32")
    kernel(x2, y2)
    np.testing.assert_array_equal(y2, 6)
    np.testing.assert_array_equal(y, 3)
    with pytest.raises(CompileError, match="must be float32"):
        kernel(x2, np.zeros((4, 9), "float32"))
    with pytest.raises(CompileError, match="must be writeable"):
        kernel(x, _read_only((4, 8)))


def _read_only(shape):
    out = np.zeros(shape, "float32")
    out.setflags(write=False)
    return out
