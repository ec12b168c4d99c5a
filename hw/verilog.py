"""Synthesizable Verilog of the accelerator for one Config."""
from __future__ import annotations

import os

from vtalab.spec import Config

TOP_NAME = "vtalab_core"


def generate(cfg: Config, name: str = TOP_NAME) -> str:
    """Verilog text of ``Core(cfg)`` with top module ``name`` (built-in Yosys, reproducible)."""
    from amaranth.back import verilog

    from .core import Core

    saved = os.environ.get("AMARANTH_USE_YOSYS")
    os.environ["AMARANTH_USE_YOSYS"] = "builtin"
    try:
        core = Core(cfg)
        return verilog.convert(core, name=name, emit_src=False)
    finally:
        if saved is None:
            os.environ.pop("AMARANTH_USE_YOSYS", None)
        else:
            os.environ["AMARANTH_USE_YOSYS"] = saved
