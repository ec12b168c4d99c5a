"""CUDA target: PTX from the loop IR, assembled by ptxas, launched where a GPU exists."""
import numpy as np
import pytest

from vtalab.compiler.errors import CompileError
from vtalab.compiler.ir import interp
from vtalab.compiler.ir.expr import Var, const
from vtalab.compiler.ir.func import PrimFunc
from vtalab.compiler.ir.stmt import Buffer, For, Store
from vtalab.compiler.llvm.cuda import CudaRunner, cuda_available
from vtalab.compiler.llvm.cuda_ops import conv2d_cuda_func, matmul_cuda_func
from vtalab.compiler.llvm.nvptx import assemble, build_cuda, find_ptxas
from vtalab.compiler.target import CudaTarget

from ..cpu.reference import conv2d_ref

needs_ptxas = pytest.mark.skipif(find_ptxas() is None,
                                 reason="ptxas not on PATH (CUDA toolkit / nvidia-cuda-nvcc)")
needs_gpu = pytest.mark.skipif(not cuda_available(),
                               reason="no CUDA driver or GPU on this machine")


def _matmul_case():
    rng = np.random.default_rng(0)
    return (rng.standard_normal((37, 19)).astype("float32"),
            rng.standard_normal((19, 23)).astype("float32"))


def _conv_case():
    rng = np.random.default_rng(1)
    return (rng.standard_normal((1, 3, 12, 11)).astype("float32"),
            rng.standard_normal((8, 3, 3, 3)).astype("float32"))


def test_cuda_schedules_compute_the_right_values():
    """The thread-bound loop IR is ordinary loop IR: the interpreter checks it."""
    a, b = _matmul_case()
    out = np.zeros((37, 23), "float32")
    interp.run(matmul_cuda_func(37, 19, 23), a, b, out)
    np.testing.assert_allclose(out, a @ b, rtol=1e-4, atol=1e-4)
    x, w = _conv_case()
    func = conv2d_cuda_func(x.shape, w.shape, stride=2, padding=1)
    out = np.zeros(func.params[-1].shape, "float32")
    interp.run(func, x, w, out)
    np.testing.assert_allclose(out, conv2d_ref(x, w, (2, 2), (1, 1, 1, 1), (1, 1), 1),
                               rtol=1e-4, atol=1e-4)


def test_ptx_has_one_entry_per_stage_and_launch_dims():
    x, w = _conv_case()
    mod = build_cuda(conv2d_cuda_func(x.shape, w.shape, stride=2, padding=1), CudaTarget(80))
    assert ".target sm_80" in mod.ptx
    assert mod.ptx.count(".entry") == len(mod.kernels) == 2       # pad, then conv
    assert [b.name for b in mod.workspaces] == ["xpad"]
    conv = mod.kernels[1]
    assert conv.block[0] * conv.grid[0] == 8 * 6 * 6 and conv.block[0] <= 256
    mm = build_cuda(matmul_cuda_func(37, 19, 23), CudaTarget(90))
    assert mm.kernels[0].grid == (2, 1, 1) and mm.kernels[0].block == (16, 10, 1)


def test_smaller_thread_loops_are_guarded():
    i, j = Var("i"), Var("j")
    a, b = Buffer("a", (32,), "int32"), Buffer("b", (8,), "int32")
    body = For(i, 32, Store(a, (i,), const(1)), "threadIdx.x")
    from vtalab.compiler.ir.stmt import seq
    func = PrimFunc("two", (a, b), seq(body, For(j, 8, Store(b, (j,), const(2)), "threadIdx.x")))
    mod = build_cuda(func)
    assert [k.block for k in mod.kernels] == [(32, 1, 1), (8, 1, 1)]
    with pytest.raises(CompileError, match="must bind at least one loop"):
        build_cuda(PrimFunc("serial", (b,), For(j, 8, Store(b, (j,), const(2)))))


@needs_ptxas
@pytest.mark.parametrize("sm", [80, 90])
def test_ptxas_assembles_matmul_and_conv2d(sm):
    x, w = _conv_case()
    for func in (matmul_cuda_func(64, 32, 48),
                 conv2d_cuda_func(x.shape, w.shape, stride=1, padding=1),
                 conv2d_cuda_func((1, 3, 30, 30), (16, 3, 7, 7), stride=2, padding=3)):
        mod = build_cuda(func, CudaTarget(sm))
        cubin = assemble(mod.ptx, mod.arch)
        assert cubin[:4] == b"\x7fELF"


@needs_ptxas
def test_ptxas_errors_are_compile_errors():
    with pytest.raises(CompileError, match="ptxas must accept"):
        assemble(".version 8.0\n.target sm_80\nnot ptx", "sm_80")


@needs_gpu
def test_gpu_runs_matmul_and_conv2d():
    a, b = _matmul_case()
    out = np.zeros((37, 23), "float32")
    CudaRunner(build_cuda(matmul_cuda_func(37, 19, 23)))(a, b, out)
    np.testing.assert_allclose(out, a @ b, rtol=1e-4, atol=1e-4)
    x, w = _conv_case()
    mod = build_cuda(conv2d_cuda_func(x.shape, w.shape, stride=2, padding=1))
    out = np.zeros(mod.params[-1].shape, "float32")
    CudaRunner(mod)(x, w, out)
    np.testing.assert_allclose(out, conv2d_ref(x, w, (2, 2), (1, 1, 1, 1), (1, 1), 1),
                               rtol=1e-4, atol=1e-4)
