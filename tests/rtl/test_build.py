"""Build cache: keyed by config fingerprint and source hash, no Verilog needed to hit it."""
import re

import pytest

from vtalab.sim.rtl import build
from vtalab.spec import preset

from .backends import require_rtl


def test_cached_build_is_found_without_generating_verilog(monkeypatch):
    require_rtl()
    lib = build.library(preset("tiny"))                  # builds once if needed

    def forbidden(*args, **kwargs):
        raise AssertionError("a cached build must not regenerate Verilog")
    monkeypatch.setattr("vtalab.hw.verilog.generate", forbidden)
    assert build.library(preset("tiny")) == lib
    assert lib.parent.name.startswith(preset("tiny").fingerprint())


def test_source_change_gives_a_new_build_path(monkeypatch, tmp_path):
    source = tmp_path / "alu.py"
    source.write_text("x = 1\n")
    monkeypatch.setattr(build, "_hashed_files", lambda: [source])
    before = build.build_path(preset("tiny"))
    source.write_text("x = 2\n")
    after = build.build_path(preset("tiny"))
    assert before != after and before.parent == after.parent
    assert build.build_path(preset("default")) != after
    assert build.build_path(preset("tiny"), trace="vcd") != after


def test_another_arch_is_a_separate_build_and_a_bad_one_is_refused(monkeypatch):
    monkeypatch.delenv(build.NETLIST_ENV, raising=False)
    native = build.build_path(preset("tiny"))
    portable = build.build_path(preset("tiny"), arch="x86-64-v3")
    assert portable != native and portable.name.endswith("-x86-64-v3")
    assert build.build_path(preset("tiny"), arch="native") == native
    with pytest.raises(build.SimError, match="arch must be a -march target.*'native; rm'"):
        build.build_path(preset("tiny"), arch="native; rm")


def test_the_synthesis_netlist_is_a_separate_build_and_a_bad_name_is_refused(monkeypatch):
    monkeypatch.delenv(build.NETLIST_ENV, raising=False)
    simulation = build.build_path(preset("tiny"))
    synthesis = build.build_path(preset("tiny"), netlist="synthesis")
    assert synthesis != simulation and synthesis.name.endswith("-synthesis")
    monkeypatch.setenv(build.NETLIST_ENV, "synthesis")
    assert build.build_path(preset("tiny")) == synthesis
    assert build.build_path(preset("tiny"), netlist="simulation") == simulation
    with pytest.raises(build.SimError, match=r"netlist must be one of .* not 'gates'"):
        build.build_path(preset("tiny"), netlist="gates")
    monkeypatch.setenv(build.NETLIST_ENV, "gates")
    with pytest.raises(build.SimError, match=r"VTALAB_RTL_NETLIST must be one of .* not 'gates'"):
        build.library(preset("tiny"))


def test_hashed_sources_cover_the_hardware_and_the_harness():
    names = {p.name for p in build._hashed_files()}
    assert {"core.py", "isa.py", "regs.py", "harness.cpp", "codegen.py"} <= names


def test_generated_header_takes_the_register_map_from_spec():
    from vtalab.sim.rtl import codegen
    from vtalab.spec.regs import REGISTERS, STATUS_BITS
    text = codegen.config_header(preset("default"))
    for reg in REGISTERS:
        assert f"#define VT_REG_{reg.name.upper()} {reg.offset:#x}u" in text
    for bit, pos in STATUS_BITS.items():
        assert f"#define VT_STATUS_{bit.upper()} {pos}u" in text
    assert "#define VT_BUS_BYTES 8u" in text
    assert codegen.cpp_name("axi__araddr") == "axi___05Faraddr"


def test_fast_build_evaluates_once_per_cycle():
    """The harness's one-eval step needs Verilator's clock-edge state; a Verilator that
    names it differently would silently fall back to two evals per cycle (half the speed)."""
    require_rtl()
    lib = build.library(preset("tiny"))
    log = (lib.parent / "build.log").read_text()
    assert "-DVT_FAST_EDGE=1" in log


def test_sim_wrapper_registers_reset_and_the_r_handshake():
    from vtalab.sim.rtl import codegen
    from vtalab.spec.errors import SimError
    core = ("module vtalab_core(clk, rst, axi__rvalid, axi__rready, done);\n  input clk;\n"
            "  input rst;\n  input axi__rvalid;\n  output axi__rready;\n  output done;\n"
            "endmodule\n")
    text = codegen.sim_wrapper(core)
    assert "module vtalab_sim(clk, rst, axi__rvalid, axi__rready, done, sim_r_fire);" in text
    assert "rst_q <= rst;" in text and ".rst(rst_q)" in text and ".done(done)" in text
    assert "sim_r_fire <= axi__rvalid & axi__rready;" in text
    with pytest.raises(SimError, match="axi__rready"):
        codegen.sim_wrapper(core.replace("axi__rready", "axi__rdy"))


def test_simulation_verilog_folds_next_state_logic_into_clock_enables():
    """The native build's Verilog: no register's next value computed in an always @*
    block (Verilator evaluates those every cycle); the plain Verilog has one per register.
    That both describe the same machine is what the RTL conformance tests show."""
    from vtalab.hw.verilog import generate
    plain = generate(preset("tiny"))
    fast = generate(preset("tiny"), for_simulation=True)
    assert plain.count("always @*") > 100
    assert fast.count("always @*") == 0
    enabled = re.findall(r"always @\(posedge clk\)\n\s+if ", fast)
    assert len(enabled) > 0.8 * fast.count("always @(posedge clk)")


def test_simulation_verilog_runs_the_gemm_at_the_accumulator_width():
    """hw/gemm_tree.py: the simulated GEMM wraps at acc_bits and carries only the sums
    from stage 4 on (the same values, see the RTL conformance tests); the synthesized one
    keeps int16 products."""
    from vtalab.hw.verilog import generate
    cfg = preset("tiny")
    plain = generate(cfg)
    fast = generate(cfg, for_simulation=True)
    product_bits = cfg.elem_bits("inp") + cfg.elem_bits("wgt")
    assert f"reg [{product_bits - 1}:0] prod7_0_0_0 " in plain
    assert "prod7_" not in fast and "land8_" not in fast
    assert "wgt4_" not in fast
    assert f"reg [{cfg.acc_bits - 1}:0] sum4_0_0 " in fast


def test_synthesized_datapath_registers_load_every_cycle():
    """hw/exec_pipe.py: from stage 3 on every micro-op moves one stage per cycle, so the
    synthesized GEMM/ALU registers need no clock enable (the 128-MAC array's slowest nets
    on the ECP5); the simulation netlist keeps them (Verilator skips idle registers). That
    both compute the same values is what the synthesis-netlist RTL tests show."""
    from vtalab.hw.core import Core
    from vtalab.hw.verilog import convert

    class Synthesis:                  # not a simulator platform; enables folded by opt_dff
        pass
    cfg = preset("tiny")
    synthesized = convert(Core(cfg), "top", platform=Synthesis(), for_simulation=True)
    simulated = convert(Core(cfg), "top", for_simulation=True)
    for name in ("wgt4_0", "inp5_0", "prod7_0_0_0", "land8_0_0_0", "part9_0_0_1", "alu6_v_0"):
        loaded = rf"always @\(posedge clk\)\n\s+{name} <= "
        assert re.search(loaded, synthesized), f"{name} must load every cycle when synthesized"
        assert not re.search(loaded, simulated), f"{name} keeps its enable when simulated"
