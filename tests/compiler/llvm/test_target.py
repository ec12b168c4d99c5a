"""Target: one description of accelerator, CPU and CUDA placement."""
import pytest

from vtalab.compiler.errors import CompileError
from vtalab.compiler.target import CpuTarget, CudaTarget, Target
from vtalab.spec.config import preset


def test_host_target_describes_this_cpu():
    t = Target.host(threads=2)
    assert t.kind == "cpu" and t.cpu.threads == 2
    assert t.cpu.triple and t.cpu.name
    assert t.cpu.vector_bits in (128, 256, 512)
    assert t.fingerprint() == t.with_threads(1).fingerprint()      # threads: same code


def test_cuda_and_vta_targets_change_the_fingerprint():
    host = Target.host()
    cuda80, cuda90 = Target.for_cuda(80), Target.for_cuda(90)
    vta = Target.vta(preset("default"))
    prints = {t.fingerprint() for t in (host, cuda80, cuda90, vta)}
    assert len(prints) == 4
    assert cuda90.cuda.arch == "sm_90" and "sm_90" in str(cuda90)
    assert vta.config is not None and vta.cpu.name == host.cpu.name


def test_bad_targets_are_rejected_with_the_parameter_named():
    with pytest.raises(CompileError, match="cuda sm must be one of"):
        CudaTarget(sm=81)
    with pytest.raises(CompileError, match="target kind must be"):
        Target("fpga")
    with pytest.raises(CompileError, match="cpu threads must be"):
        CpuTarget("x86_64-unknown-linux-gnu", "generic", threads=0)
    with pytest.raises(CompileError, match="vta target must have a Config"):
        Target("vta")
