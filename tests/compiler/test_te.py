"""Compute declarations, schedule primitives and generic lowering (checked by interp)."""
import numpy as np
import pytest

from vtalab.compiler import te
from vtalab.compiler.errors import CompileError, ScheduleError, ShapeError
from vtalab.compiler.ir import interp
from vtalab.compiler.te.build import lower_schedule


def _matmul(M=8, K=12, N=6):
    A = te.placeholder((M, K), "int8", "A")
    B = te.placeholder((N, K), "int8", "B")
    k = te.reduce_axis(K, "k")
    C = te.compute((M, N), lambda i, j: te.sum(A[i, k].astype("int32") * B[j, k].astype("int32"),
                                               axis=k), "C")
    D = te.compute((M, N), lambda i, j: te.max(C[i, j] >> 2, 0).astype("int8"), "D")
    return A, B, C, D


def _check(s, M=8, K=12, N=6):
    f = lower_schedule(s)
    rng = np.random.default_rng(0)
    a = rng.integers(-128, 128, (M, K)).astype(np.int8)
    b = rng.integers(-128, 128, (N, K)).astype(np.int8)
    d = np.zeros((M, N), np.int8)
    interp.run(f, a, b, d)
    ref = np.maximum((a.astype(np.int32) @ b.T.astype(np.int32)) >> 2, 0).astype(np.int8)
    np.testing.assert_array_equal(d, ref)
    return f


def test_tile_compute_at_cache_read_nondivisible_split():
    A, B, C, D = _matmul()
    s = te.create_schedule(D)
    i, j = s[D].op.axes
    io, jo, ii, ji = s[D].tile(i, j, 4, 3)
    s[C].compute_at(s[D], jo)
    AA = s.cache_read(A, "local", [C])
    ko, ki = s[C].split(s[C].op.reduce_axes[0], 5)
    s[AA].compute_at(s[C], ko)
    _check(s)


def test_uneven_split_of_a_fused_or_split_axis_is_guarded():
    # Splitting a fused axis (or a split's outer axis) into tiles that do not divide it
    # must not write past the tensor.
    for resplit in (False, True):
        A = te.placeholder((3, 5), "float32", "A")
        B = te.compute((3, 5), lambda i, j: A[i, j] + 1.0, name="B")
        s = te.create_schedule(B)
        fused = s[B].fuse(*s[B].leaf_iter_vars)
        outer, _ = s[B].split(fused, 4)
        if resplit:
            s[B].split(outer, 3)
        a = np.arange(15, dtype=np.float32).reshape(3, 5)
        b = np.full((4, 5), -7.0, np.float32)     # one spare row catches stray writes
        interp.run(lower_schedule(s), a, b[:3])
        np.testing.assert_array_equal(b[:3], a + 1)
        assert (b[3] == -7).all()


def test_fuse_reorder_inline_annotations():
    A, B, C, D = _matmul()
    s = te.create_schedule(D)
    i, j = s[D].op.axes
    f = s[D].fuse(i, j)
    fo, fi = s[D].split(f, 4)
    s[D].parallel(fo)
    s[D].vectorize(fi)
    ci, cj = s[C].op.axes
    s[C].reorder(cj, ci)
    s[C].unroll(cj)
    s[C].compute_root()
    func = _check(s)
    text = str(func)
    assert "parallel" in text and "vectorize" in text and "unroll" in text


def test_cache_write_and_compute_inline():
    A, B, C, D = _matmul()
    s = te.create_schedule(D)
    CL = s.cache_write(C, "local")
    s[C].compute_inline()
    s[CL].compute_at(s[D], s[D].op.axes[0])
    _check(s)


def test_shape_and_dtype_errors():
    A = te.placeholder((4, 4), "int8", "A")
    with pytest.raises(ShapeError, match="must have 2 dimensions, not 1"):
        A[0]
    with pytest.raises(ShapeError, match="must be in 0..3, not 4"):
        A[4, 0]
    with pytest.raises(ShapeError, match="lambda must take 2 indices, not 1"):
        te.compute((4, 4), lambda i: A[i, i])
    with pytest.raises(CompileError, match="same dtype"):
        te.compute((4,), lambda i: A[i, i] + A[i, i].astype("int32"))
    with pytest.raises(ShapeError, match="positive integers"):
        te.placeholder((0, 3))


def test_schedule_errors():
    A, B, C, D = _matmul()
    s = te.create_schedule(D)
    with pytest.raises(ScheduleError, match="leaf axis of stage D"):
        s[D].split(s[C].op.axes[0], 2)
    i, j = s[D].op.axes
    with pytest.raises(ScheduleError, match="adjacent"):
        s[D].fuse(j, i)
    with pytest.raises(ScheduleError, match="exactly one of factor or nparts"):
        s[D].split(i)
    with pytest.raises(ScheduleError, match="thread tag"):
        s[D].bind(i, "warp")


def test_sum_starts_from_its_init():
    M, K, N = 4, 6, 5
    A = te.placeholder((M, K), "int8", "A")
    bias = te.placeholder((N,), "int32", "bias")
    k = te.reduce_axis(K, "k")
    C = te.compute((M, N), lambda i, j: te.sum(A[i, k].astype("int32") * 3, axis=k,
                                               init=bias[j]), "C")
    s = te.create_schedule(C)
    assert s[C].op.inputs[0] is bias              # the start is computed before the sum
    f = lower_schedule(s)
    rng = np.random.default_rng(1)
    a = rng.integers(-128, 128, (M, K)).astype(np.int8)
    b = rng.integers(-1000, 1000, N).astype(np.int32)
    c = np.zeros((M, N), np.int32)
    arrays = {"A": a, "bias": b, "C": c}
    interp.run(f, *[arrays[p.name] for p in f.params])
    np.testing.assert_array_equal(c, a.astype(np.int32).sum(1, keepdims=True) * 3 + b)
    with pytest.raises(CompileError, match="init must not use the reduce axes"):
        te.compute((M, N), lambda i, j: te.sum(A[i, k].astype("int32"), axis=k,
                                               init=A[i, k].astype("int32")), "D")
