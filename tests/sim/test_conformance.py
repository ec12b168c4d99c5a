"""VTA's own HLS model's outputs, reproduced byte for byte by the functional simulator."""
import numpy as np
import pytest

from tests.conftest import shared_dir
from vtalab.sim.conformance import find_cases, load_case
from vtalab.sim.fsim import FunctionalSimulator
from vtalab.spec import preset

ROOT = shared_dir() / "conformance" / "vta-hls"
CASES = find_cases(ROOT) if ROOT.is_dir() else []


def test_all_cases_present(conformance_root):
    assert len(find_cases(conformance_root)) == 33


@pytest.mark.parametrize("path", CASES, ids=[f"{p.parent.name}/{p.name}" for p in CASES])
def test_case_matches_vta_hls(path):
    cfg = preset("default")
    case = load_case(path, cfg)
    sim = FunctionalSimulator(cfg, dram_bytes=len(case.dram) + 4096)
    sim.dram[:len(case.dram)] = case.dram
    sim.run(case.insn_addr, len(case.insns))
    out = sim.dram[case.out_offset:case.out_offset + len(case.expected_out)].tobytes()
    assert out == case.expected_out
    acc = sim.sram.acc.reshape(cfg.acc_depth, -1)
    np.testing.assert_array_equal(acc, case.expected_acc)
