"""Where compiled code runs: the accelerator (a ``Config``), a CPU, or a CUDA GPU.

One ``Target`` travels through the compiler; the graph compiler places each operator on
``target.config`` (the accelerator) when it can and on the fallback (``cpu`` or ``cuda``)
otherwise. ``fingerprint()`` keys every cache of compiled code.

    Target.host()                  # this machine's CPU, every core
    Target.host(threads=1)
    Target.for_cuda(sm=90)         # NVPTX code for compute capability 9.0 (+ host CPU)
    Target.vta(preset("default"))  # accelerator first, host CPU as fallback
"""
from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field, replace
from functools import lru_cache

from .errors import CompileError

CUDA_SMS = (50, 52, 53, 60, 61, 62, 70, 72, 75, 80, 86, 87, 89, 90, 100, 120)


@dataclass(frozen=True)
class CpuTarget:
    """An LLVM CPU: triple, CPU name, feature string (``+avx2,...``) and worker threads."""
    triple: str
    name: str
    features: str = ""
    threads: int = 1

    def __post_init__(self):
        if not isinstance(self.threads, int) or self.threads < 1:
            raise CompileError(f"cpu threads must be a positive integer, not {self.threads!r}")

    @classmethod
    def host(cls, threads: int | None = None) -> "CpuTarget":
        triple, name, features = _host_cpu()
        return cls(triple, name, features, threads or os.cpu_count() or 1)

    def has(self, feature: str) -> bool:
        return f"+{feature}" in self.features.split(",")

    @property
    def vector_bits(self) -> int:
        """Widest float vector register: 512 (AVX-512), 256 (AVX), else 128."""
        if self.has("avx512f"):
            return 512
        return 256 if self.has("avx") or self.has("avx2") else 128

    def vector_lanes(self, bits: int = 32) -> int:
        return self.vector_bits // bits


@dataclass(frozen=True)
class CudaTarget:
    """An NVIDIA GPU by compute capability (``sm=80`` is sm_80); PTX ISA version for it."""
    sm: int = 80
    max_threads: int = 1024

    def __post_init__(self):
        if self.sm not in CUDA_SMS:
            raise CompileError(f"cuda sm must be one of {CUDA_SMS}, not {self.sm!r}")

    triple = "nvptx64-nvidia-cuda"

    @property
    def arch(self) -> str:
        return f"sm_{self.sm}"

    @property
    def ptx_feature(self) -> str:
        return "+ptx80" if self.sm < 100 else "+ptx86"


@dataclass(frozen=True)
class Target:
    """One description of where the compiler may place operators."""
    kind: str = "cpu"                       # "cpu", "cuda" or "vta"
    cpu: CpuTarget = field(default_factory=CpuTarget.host)
    cuda: CudaTarget | None = None
    config: object = None                   # vtalab.spec.config.Config for "vta"

    def __post_init__(self):
        if self.kind not in ("cpu", "cuda", "vta"):
            raise CompileError(f"target kind must be cpu, cuda or vta, not {self.kind!r}")
        if self.kind == "cuda" and self.cuda is None:
            raise CompileError("cuda target must have a CudaTarget, not None")
        if self.kind == "vta" and self.config is None:
            raise CompileError("vta target must have a Config, not None")

    @classmethod
    def host(cls, threads: int | None = None) -> "Target":
        return cls("cpu", CpuTarget.host(threads))

    @classmethod
    def for_cuda(cls, sm: int = 80) -> "Target":
        return cls("cuda", CpuTarget.host(), CudaTarget(sm))

    @classmethod
    def vta(cls, config) -> "Target":
        return cls("vta", CpuTarget.host(), None, config)

    def with_threads(self, threads: int) -> "Target":
        return replace(self, cpu=replace(self.cpu, threads=threads))

    def fingerprint(self) -> str:
        """Stable hash of everything that changes generated code (not the thread count)."""
        parts = [self.kind, self.cpu.triple, self.cpu.name, self.cpu.features]
        if self.cuda is not None:
            parts.append(self.cuda.arch)
        if self.config is not None:
            parts.append(self.config.fingerprint())
        return hashlib.sha256("|".join(parts).encode()).hexdigest()[:16]

    def __str__(self) -> str:
        if self.kind == "cuda":
            return f"cuda -arch={self.cuda.arch} (host {self.cpu.name})"
        if self.kind == "vta":
            return f"vta {getattr(self.config, 'name', 'config')} (fallback {self.cpu.name})"
        return f"cpu {self.cpu.name} x{self.cpu.threads}"


@lru_cache(maxsize=1)
def _host_cpu() -> tuple[str, str, str]:
    from .llvm.jit import host_cpu
    return host_cpu()
