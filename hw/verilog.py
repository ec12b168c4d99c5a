"""Synthesizable Verilog of the accelerator for one Config."""
from __future__ import annotations

import os
from contextlib import contextmanager

from vtalab.spec import Config

TOP_NAME = "vtalab_core"

# For simulators: every register whose next value is "keep, unless <enable>: <value>"
# (most of them) becomes ``if (en) q <= d``, with the synchronous reset folded in the same
# way. Amaranth's own output computes each next value in an ``always @*`` block that
# Verilator evaluates every cycle; folded, an idle register costs one test. Same function,
# register for register: the passes only move muxes into enables and resets and merge
# equal cells. (Not ``wreduce``: it narrows the wide GEMM of hw/gemm_tree.py back to int8
# products and sign-extends them bit by bit, which Verilator runs 45% slower.)
SIMULATION_PASSES = ("proc", "opt_expr", "opt_clean", "opt_dff", "opt_merge", "opt_clean",
                     "memory_collect", "write_verilog -norename")


class SimulatorPlatform:
    """What the Core is elaborated for when a cycle simulator runs it: the GEMM at the
    accumulator's width (hw/gemm_tree.py) and the forwarded row as a priority chain
    (hw/exec_pipe.py), the same values as the synthesized datapath."""
    vtalab_simulator = True


class OpenFlowPlatform:
    """What the RTL "synthesis" netlist is elaborated for (sim/rtl/build.py): the structure
    the open FPGA flow synthesizes (per-lane accumulator slices and control copies,
    hw/forward.py), without the ECP5 cells (fpga/build.py puts the same attribute on the
    board's platform). ``gemm_dsp_products``: the GEMM products multiplied (the rest from
    LUTs, hw/lut_multiplier.py; None: all); ``wgt_slice_bits``: the wgt entry width from
    which the wgt buffer is sliced per output lane (None: the flow's, hw/sram.py)."""
    vtalab_lane_groups = True

    def __init__(self, gemm_dsp_products: int | None = None,
                 wgt_slice_bits: int | None = None):
        self.vtalab_gemm_dsp_products = gemm_dsp_products
        if wgt_slice_bits is not None:
            self.vtalab_wgt_slice_bits = wgt_slice_bits


def synthesis_netlist_platform(cfg: Config) -> OpenFlowPlatform:
    """The RTL "synthesis" netlist's platform: the first half of the GEMM's products
    multiplied, the second half from LUTs, so that one RTL test run checks both forms (a
    board without enough DSPs builds the same two, hw/lut_multiplier.py); the wgt buffer
    sliced at every width, so that it checks the sliced form too."""
    return OpenFlowPlatform(gemm_dsp_products=cfg.macs_per_cycle // 2, wgt_slice_bits=0)


def for_simulator(platform) -> bool:
    """Whether ``platform`` is a cycle simulator's (:class:`SimulatorPlatform`): logic
    may then take the form Verilator runs fastest, computing the same values."""
    return bool(getattr(platform, "vtalab_simulator", False))


@contextmanager
def _builtin_yosys():
    saved = os.environ.get("AMARANTH_USE_YOSYS")
    os.environ["AMARANTH_USE_YOSYS"] = "builtin"
    try:
        yield
    finally:
        if saved is None:
            os.environ.pop("AMARANTH_USE_YOSYS", None)
        else:
            os.environ["AMARANTH_USE_YOSYS"] = saved


def generate(cfg: Config, name: str = TOP_NAME, for_simulation: bool = False,
             platform=None) -> str:
    """Verilog text of ``Core(cfg)`` with top module ``name`` (built-in Yosys, reproducible).

    ``for_simulation``: elaborated for :class:`SimulatorPlatform`, registers written with
    clock enables (:data:`SIMULATION_PASSES`): Verilator runs it faster; the default is
    Amaranth's plain output, as synthesis sees the design."""
    from .core import Core
    return convert(Core(cfg), name, platform=platform, for_simulation=for_simulation)


def convert(component, name: str, platform=None, for_simulation: bool = False) -> str:
    """Verilog text of any Amaranth ``component`` (elaborated for ``platform``), as
    :func:`generate` writes the Core's."""
    from amaranth.back import rtlil, verilog
    with _builtin_yosys():
        if not for_simulation:
            return verilog.convert(component, name=name, emit_src=False, platform=platform)
        from amaranth._toolchain.yosys import find_yosys
        platform = SimulatorPlatform() if platform is None else platform
        text = rtlil.convert(component, name=name, emit_src=False, platform=platform)
        yosys = find_yosys(lambda version: version >= (0, 40))
        script = [f"read_rtlil <<rtlil\n{text}\nrtlil", *SIMULATION_PASSES]
        return yosys.run(["-q", "-"], "\n".join(script), ignore_warnings=True)
