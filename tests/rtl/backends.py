"""One way for tests to open a device of any backend; the RTL one skips without tools."""
from __future__ import annotations

import pytest

from vtalab.runtime import open_device

BACKENDS = ["fsim", "rtl"]
#: the RTL as FPGA synthesis elaborates it (exact int8 datapath, free-running registers)
SYNTHESIS = "rtl-synthesis"


def require_rtl() -> None:
    from vtalab.sim.rtl import RtlUnavailable, check_available
    try:
        check_available()
    except RtlUnavailable as exc:
        pytest.skip(str(exc))


def open_backend(backend: str, cfg, **options):
    if backend == SYNTHESIS:
        backend, options = "rtl", dict(options, netlist="synthesis")
    if backend == "rtl":
        require_rtl()
    return open_device(backend, cfg, **options)
