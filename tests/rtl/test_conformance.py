"""VTA's 33 conformance vectors (outputs of VTA's HLS model) on every backend, bit-exact."""
import dataclasses

import pytest

from tests.conftest import shared_dir
from vtalab.sim.conformance import find_cases, load_case
from vtalab.spec import Isa, preset
from vtalab.spec.isa import MemInsn

from .backends import BACKENDS, SYNTHESIS, open_backend

ROOT = shared_dir() / "conformance" / "vta-hls"
CASES = find_cases(ROOT) if ROOT.is_dir() else []
CFG = preset("default")


@pytest.fixture(scope="module", params=BACKENDS + [SYNTHESIS])
def device(request):
    with open_backend(request.param, CFG, dram_bytes=8 << 20) as dev:
        yield dev


def relocated(case, base: int) -> bytes:
    """The case's instructions with every DRAM address moved up by ``base`` bytes."""
    insns = [dataclasses.replace(i, dram_base=i.dram_base + base // CFG.entry_bytes(i.mem.buffer))
             if isinstance(i, MemInsn) else i for i in case.insns]
    return Isa(CFG).encode_program(insns)


@pytest.mark.parametrize("path", CASES, ids=[f"{p.parent.name}/{p.name}" for p in CASES])
def test_vta_vector(device, path):
    case = load_case(path, CFG)
    buf = device.alloc(len(case.dram), align=4096)
    try:
        image = bytearray(case.dram.tobytes())
        stream = relocated(case, buf.addr)
        image[case.insn_addr:case.insn_addr + len(stream)] = stream
        buf.write(bytes(image))
        device.run(buf.addr + case.insn_addr, len(case.insns))
        out = buf.read(offset=case.out_offset, shape=len(case.expected_out)).tobytes()
        assert out == case.expected_out
    finally:
        buf.free()


def test_vectors_present(conformance_root):
    assert len(CASES) == 33
