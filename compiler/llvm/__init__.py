"""LLVM fallback: loop IR -> LLVM IR (llvmlite) -> native CPU code or NVPTX/PTX for CUDA.

    from vtalab.compiler.llvm import build
    kernel = build(prim_func, Target.host(threads=2))   # JIT (MCJIT), cached on disk
    kernel(*arrays)
"""
from .runtime import Kernel, build, llvm_ir, chunks
from .module import KernelPlan, Region, build_module

__all__ = ["Kernel", "build", "llvm_ir", "chunks", "KernelPlan", "Region", "build_module"]
