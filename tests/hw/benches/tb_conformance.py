"""Conformance bench: the default-preset Core runs VTA's own test vectors (from its HLS
model) and must reproduce every output byte. VTALAB_CONFORMANCE_ROOT names the vectors."""
from __future__ import annotations

import os
from pathlib import Path

import cocotb
import numpy as np

import tb_core
from vtalab.sim.conformance import find_cases, load_case
from vtalab.spec import preset

CFG = preset("default")
tb_core.CFG = CFG


@cocotb.test(timeout_time=100, timeout_unit="ms")
async def test_vta_conformance_vectors(dut):
    root = Path(os.environ["VTALAB_CONFORMANCE_ROOT"])
    failures = []
    for path in find_cases(root):
        case = load_case(path, CFG)
        image = np.zeros(-(-(case.dram.size + 8192) // 4096) * 4096, dtype=np.uint8)
        image[:case.dram.size] = case.dram
        mem, counters = await tb_core.run_image(dut, image, len(case.insns), 0.2, seed=7,
                                                insn_addr=case.insn_addr)
        got = mem[case.out_offset:case.out_offset + len(case.expected_out)].tobytes()
        status = "ok" if got == case.expected_out else "MISMATCH"
        dut._log.info(f"{case.name}: {status}, {counters['cycles']} cycles")
        if got != case.expected_out:
            failures.append(case.name)
    assert not failures, f"cases differ from VTA's model: {failures}"
