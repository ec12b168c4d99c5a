"""The same loop IR for CUDA: thread/block-bound loops -> PTX through LLVM's NVPTX backend.

A ``For`` whose kind is a thread tag ("blockIdx.x", "threadIdx.y", ...) runs once per
thread with its variable read from the matching special register; the launch extent of a
tag is the largest extent bound to it, and smaller loops get a guard. Each top-level
statement of the function becomes one ``ptx_kernel`` (a grid-wide barrier separates
stages); root allocations become device workspaces, ``shared`` buffers live in
addrspace(3). exp of float32 uses the polynomial of ``intrinsics.py`` (no libdevice).
"""
from __future__ import annotations

import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

import llvmlite.ir as ir

from ..errors import CompileError
from ..ir.func import PrimFunc
from ..ir.stmt import Allocate, For, THREAD_TAGS
from ..ir.visit import walk
from ..target import CudaTarget
from .codegen import FunctionEmitter
from .jit import parse, optimize, target_machine
from .module import split_regions, symbol_name
from .types import I32, I64, PTR, VOID, memory_type

DATA_LAYOUT = "e-p6:32:32-i64:64-i128:128-i256:256-v16:16-v32:32-n16:32:64"


@dataclass(frozen=True)
class CudaKernel:
    symbol: str
    grid: tuple        # (x, y, z) blocks
    block: tuple       # (x, y, z) threads


@dataclass(frozen=True)
class CudaModule:
    ptx: str
    kernels: tuple     # CudaKernels in launch order
    params: tuple      # Buffers passed by the caller
    workspaces: tuple  # Buffers the launcher allocates on the device
    arch: str
    outputs: tuple = ()  # the params the kernels write

    @property
    def buffers(self) -> tuple:
        return self.params + self.workspaces


def launch_dims(stmt) -> dict:
    dims: dict = {}
    for node in walk(stmt):
        if isinstance(node, For) and node.kind in THREAD_TAGS:
            dims[node.kind] = max(dims.get(node.kind, 1), node.extent)
    return dims


class NvptxEmitter(FunctionEmitter):
    def __init__(self, fn, buffers, dims):
        super().__init__(fn, buffers, fast_exp=True)
        self.dims = dims

    def thread_loop(self, s: For):
        kind, axis = s.kind.split(".")
        reg = {"blockIdx": "ctaid", "threadIdx": "tid"}[kind]
        fn = _sreg(self.b.module, f"llvm.nvvm.read.ptx.sreg.{reg}.{axis}")
        idx = self.b.zext(self.b.call(fn, []), I64)
        self.vars[s.var] = idx
        if s.extent < self.dims[s.kind]:
            inside = self.fn.append_basic_block("bound.in")
            after = self.fn.append_basic_block("bound.end")
            self.b.cbranch(self.b.icmp_signed("<", idx, ir.Constant(I64, s.extent)), inside, after)
            self.b.position_at_end(inside)
            self.stmt(s.body)
            self.b.branch(after)
            self.b.position_at_end(after)
        else:
            self.stmt(s.body)
        self.vars.pop(s.var, None)

    def _s_Allocate(self, s: Allocate):
        buf = s.buffer
        if buf.scope != "shared":
            return super()._s_Allocate(s)
        ty = ir.ArrayType(memory_type(buf.dtype), buf.size)
        gv = ir.GlobalVariable(self.b.module, ty, name=symbol_name(f"{buf.name}_{buf.uid}"),
                               addrspace=3)
        gv.linkage = "internal"
        gv.initializer = ir.Constant(ty, ir.Undefined)
        self.pointers[buf] = self.b.addrspacecast(gv, PTR)
        self.stmt(s.body)
        return None


def _sreg(module, name):
    if name in module.globals:
        return module.globals[name]
    return ir.Function(module, ir.FunctionType(I32, []), name=name)


def _grid(dims: dict, prefix: str) -> tuple:
    return tuple(dims.get(f"{prefix}.{a}", 1) for a in "xyz")


def build_nvptx_module(func: PrimFunc) -> tuple[ir.Module, list, tuple, tuple]:
    """The NVPTX LLVM module of ``func``: (module, kernels, params, workspaces)."""
    module = ir.Module(name=func.name)
    module.triple = CudaTarget.triple
    module.data_layout = DATA_LAYOUT
    workspaces, parts = split_regions(func, merge=False)
    buffers = list(func.params) + list(workspaces)
    kernels = []
    for k, (stmt, _) in enumerate(parts):
        dims = launch_dims(stmt)
        if not dims:
            raise CompileError(f"stage {k} of {func.name} must bind at least one loop to "
                               f"blockIdx/threadIdx for cuda, not run on one thread")
        name = f"{symbol_name(func.name)}_k{k}"
        fn = ir.Function(module, ir.FunctionType(VOID, [PTR] * len(buffers)), name=name)
        fn.calling_convention = "ptx_kernel"
        for arg in fn.args:
            arg.add_attribute("noalias")
        em = NvptxEmitter(fn, buffers, dims)
        em.stmt(stmt)
        em.finish()
        kernels.append(CudaKernel(name, _grid(dims, "blockIdx"), _grid(dims, "threadIdx")))
    return module, kernels, tuple(func.params), workspaces


def build_cuda(func: PrimFunc, cuda: CudaTarget | None = None) -> CudaModule:
    """PTX text for ``func`` on ``cuda`` (default sm_80)."""
    cuda = cuda or CudaTarget()
    module, kernels, params, workspaces = build_nvptx_module(func)
    tm = target_machine(CudaTarget.triple, cuda.arch, cuda.ptx_feature, opt=3)
    mod = parse(str(module))
    optimize(mod, tm)
    ptx = tm.emit_assembly(mod)
    return CudaModule(ptx, tuple(kernels), params, workspaces, cuda.arch, tuple(func.outputs))


def find_ptxas() -> str | None:
    return shutil.which("ptxas")


def assemble(ptx: str, arch: str, ptxas: str | None = None) -> bytes:
    """A cubin from PTX via ``ptxas`` (CompileError naming ptxas' message on failure)."""
    exe = ptxas or find_ptxas()
    if exe is None:
        raise CompileError("ptxas must be on PATH to assemble PTX, not missing "
                           "(install the CUDA toolkit or nvidia-cuda-nvcc)")
    with tempfile.TemporaryDirectory() as tmp:
        src, out = Path(tmp) / "k.ptx", Path(tmp) / "k.cubin"
        src.write_text(ptx)
        run = subprocess.run([exe, f"-arch={arch}", "-O3", str(src), "-o", str(out)],
                             capture_output=True, text=True)
        if run.returncode != 0:
            raise CompileError(f"ptxas must accept the generated PTX for {arch}, not fail "
                               f"with: {run.stderr.strip()[:2000]}")
        return out.read_bytes()
