"""The independent vendor-project linter: the Tcl tokenizer, the generated PYNQ-Z1 and
DE10-Nano projects (board presets) lint clean, and hand-corrupted copies of them fail with a
message that names the file, the line and what is wrong.
"""
import re
import shutil

import pytest

pytest.importorskip("amaranth")
pytest.importorskip("amaranth_boards")

from vtalab.fpga import FpgaError  # noqa: E402
from vtalab.fpga.build import build_board  # noqa: E402
from vtalab.fpga.vendor_lint import check_project, lint_project  # noqa: E402
from vtalab.fpga.vendor_lint.tcl import TclSyntaxError, parse  # noqa: E402
from vtalab.fpga.vendor_lint.verilog import parse_modules  # noqa: E402
from vtalab.spec import preset  # noqa: E402


@pytest.fixture(scope="module")
def projects(tmp_path_factory):
    """The board presets' projects, written once: name -> (folder, build report)."""
    out = {}
    for board in ("pynq-z1", "de10-nano"):
        folder = tmp_path_factory.mktemp(board)
        out[board] = folder, build_board(board, plan_only=True, out_dir=folder,
                                         progress=lambda line: None)
    return out


# ---- the tokenizer ---------------------------------------------------------------------
def words(script: str) -> list:
    return [[(w.kind, w.literal) for w in cmd.words] for cmd in parse(script, "t.tcl")]


def test_tcl_words_braces_quotes_and_separators():
    assert words('set a {x {y} z}; puts "q r"\n# comment {\nfoo\\\n  bar') == [
        [("bare", "set"), ("bare", "a"), ("braced", "x {y} z")],
        [("bare", "puts"), ("quoted", "q r")],
        [("bare", "foo"), ("bare", "bar")]]


def test_tcl_command_substitution_nests_and_keeps_lines():
    (cmd,) = parse("\n\nset x [file dirname [info script]]", "t.tcl")
    assert cmd.line == 3
    (outer,) = cmd.words[2].commands()
    assert outer[0].name == "file" and outer[0].words[2].commands()[0][0].name == "info"
    (cmd,) = parse('puts "a $b [c d] e"', "t.tcl")
    assert [kind for kind, _ in cmd.words[1].parts] == ["text", "var", "text", "cmd", "text"]


@pytest.mark.parametrize("script, line, message", [
    ("a\nif {x} {\n  b\n", 2, "missing close-brace"),
    ('a\nputs "abc\n', 2, "missing close-quote"),
    ("set x [list a\n b", 1, "missing close-bracket"),
    ("puts {a}b", 1, "extra characters after close-brace"),
    ('puts "a"b', 1, "extra characters after close-quote"),
])
def test_tcl_syntax_errors_name_the_line_that_opened(script, line, message):
    with pytest.raises(TclSyntaxError, match=message) as info:
        parse(script, "t.tcl")
    assert info.value.line == line and str(info.value).startswith(f"t.tcl:{line}:")


def test_verilog_headers_ansi_and_yosys_style():
    modules = parse_modules(
        "(* keep *) module a (input wire [7:0] x, output y, z);\n"
        "  b inst (.p(x[0]), .q(y));\nendmodule\n"
        "module b(p, q); // yosys\n  input p;\n  output [3:0] q;\n  wire [3:0] q;\nendmodule\n",
        "m.v")
    assert {n: (p.direction, p.width) for n, p in modules["a"].ports.items()} == {
        "x": ("input", 8), "y": ("output", 1), "z": ("output", 1)}
    assert {n: p.width for n, p in modules["b"].ports.items()} == {"p": 1, "q": 4}
    (inst,) = modules["a"].instances({"b"})
    assert (inst.name, inst.line, inst.connections) == ("inst", 2, {"p": "x[0]", "q": "y"})


# ---- the generated projects --------------------------------------------------------------
@pytest.mark.parametrize("board", ["pynq-z1", "de10-nano"])
def test_generated_projects_lint_clean(projects, board):
    folder, report = projects[board]
    assert lint_project(folder, board) == []
    assert report["lint"] == []                 # build_board ran the linter on its plan


def corrupt(projects, tmp_path, board, rel, old, new):
    folder = tmp_path / board
    shutil.copytree(projects[board][0], folder)
    path = folder / rel
    if old is None:
        path.unlink()
    else:
        text = path.read_text()
        assert old in text, f"{old!r} not in {rel}"
        path.write_text(text.replace(old, new, 1))
    return folder


MUTATIONS = [
    # (board, file, old, new, expected problem: file:line: command: message)
    ("pynq-z1", "build.tcl", '"synthesis failed" }', '"synthesis failed"',
     r"^build\.tcl:51: tcl: missing close-brace for the \{ opened here$"),
    ("pynq-z1", "build.tcl", "create_bd_design system", "crate_bd_design system",
     r"^build\.tcl:12: crate_bd_design: command must be a Vivado or Tcl command \(did you "
     r"mean create_bd_design\?\), not unknown 'crate_bd_design'$"),
    ("pynq-z1", "build.tcl", "-part xc7z020", "-prat xc7z020",
     r"^build\.tcl:6: create_project: option must be one of .*-part.* \(did you mean "
     r"-part\?\), not '-prat'$"),
    ("pynq-z1", "src/vtalab_pynq_z1.xdc", "PACKAGE_PIN R14", "PACKAGE_PIN Y99",
     r"^src/vtalab_pynq_z1\.xdc:2: set_property: pin must be one of .*amaranth_boards\.arty_z7"
     r".*not 'Y99'$"),
    ("de10-nano", "vtalab_de10_nano.sdc", "-period 20.000", "-period 10.000",
     r"^vtalab_de10_nano\.sdc:1: create_clock: period of FPGA_CLK1_50 \(clk50 0, 50 MHz\) "
     r"must be 20\.000 ns, not '10\.000'$"),
    ("pynq-z1", "src/vtalab_accel.v", None, None,
     r"^build\.tcl:8: add_files: file must exist in the project folder, not missing: "
     r"src/vtalab_accel\.v$"),
    ("pynq-z1", "build.tcl", "[get_bd_pins accel/done] [get_bd_pins ps7",
     "[get_bd_pins accel/busy] [get_bd_pins ps7",
     r"^build\.tcl:31: get_bd_pins: accel/busy must be a port of module vtalab_accel, "
     r"not missing$"),
    ("de10-nano", "build.tcl", "-to {LED[7]}\n", "-to {LED[8]}\n",
     r"^build\.tcl:26: set_location_assignment: -to must be a port bit of de10_nano_top "
     r"\[.*'LED'\], not 'LED\[8\]'$"),
    ("de10-nano", "vtalab_accel_hw.tcl", "add_interface_port irq done irq",
     "add_interface_port irq finished irq",
     r"^vtalab_accel_hw\.tcl:\d+: add_interface_port: port must be one of module "
     r"vtalab_accel's ports, not 'finished'$"),
    # beyond the seven kinds the issue names
    ("pynq-z1", "build.tcl", "offset 0x43c00000", "offset 0x43c10000",
     r"^build\.tcl:37: set_property: register offset must be 0x43c00000 \(board facts of "
     r"pynq-z1\), not '0x43c10000'$"),
    ("pynq-z1", "build.tcl", "PCW_USE_S_AXI_HP0 {1}", "PCW_USE_S_AXI_HPO {1}",
     r"^build\.tcl:22: set_property: PS7 property must be one of processing_system7's "
     r"CONFIG\.PCW_\* names, not 'CONFIG\.PCW_USE_S_AXI_HPO'$"),
    ("pynq-z1", "build.tcl", "PCW_FPGA0_PERIPHERAL_FREQMHZ {100}",
     "PCW_FPGA0_PERIPHERAL_FREQMHZ {142}",
     r"^build\.tcl:22: ps7: PCW_FPGA0_PERIPHERAL_FREQMHZ must be 100 MHz \(config pynq-z1 "
     r"clock_mhz\), not '142'$"),
    ("pynq-z1", "build.tcl", "processing_system7:5.5", "processing_system7:5",
     r"^build\.tcl:13: create_bd_cell: -vlnv must be vendor:library:name:major\.minor, "
     r"not 'xilinx\.com:ip:processing_system7:5'$"),
    ("pynq-z1", "src/vtalab_pynq_z1.xdc", "IOSTANDARD LVCMOS33", "IOSTANDARD LVCMOS18",
     r"^src/vtalab_pynq_z1\.xdc:2: set_property: I/O standard of pin R14 \(led 0\) must be "
     r"'LVCMOS33', not 'LVCMOS18'$"),
    ("de10-nano", "build.tcl", "-to {LED[0]}", "-to LED[0]",
     r"^build\.tcl:12: 0: command must be a Quartus or Tcl command, not unknown '0'$"),
    ("de10-nano", "soc_system.tcl", "gui_output_clock_frequency0 100",
     "gui_output_clock_frequency0 125",
     r"^soc_system\.tcl:10: pll_0: gui_output_clock_frequency0 of pll_0 must be 100 MHz "
     r"\(config de10-nano clock_mhz\), not '125'$"),
    ("de10-nano", "soc_system.tcl", "h2f_lw_axi_master/accel.s_axi baseAddress 0x0000",
     "h2f_lw_axi_master/accel.s_axi baseAddress 0x1000",
     r"^soc_system\.tcl:\d+: set_connection_parameter_value: baseAddress on "
     r"hps_0\.h2f_lw_axi_master/accel\.s_axi must be 0x0 .*not '0x1000'$"),
    ("de10-nano", "soc_system.tcl", "F2S_Width {3}", "F2S_Width {2}",
     r"^soc_system\.tcl:\d+: F2S_Width: FPGA-to-HPS width must be the accelerator's 128 "
     r"bits, not 64$"),
    ("de10-nano", "src/de10_nano_top.v", "output wire [14:0] HPS_DDR3_MEM_A",
     "output wire [13:0] HPS_DDR3_MEM_A",
     r"^src/de10_nano_top\.v:\d+: soc_system: HPS_DDR3_MEM_A must be 15 bits "
     r"\(MEM_ROW_ADDR_WIDTH 15\), not 14$"),
]


@pytest.mark.parametrize("board, rel, old, new, expected", MUTATIONS,
                         ids=[f"{m[0]}:{m[1]}:{(m[3] or 'deleted')[:24]}" for m in MUTATIONS])
def test_corrupted_projects_fail_with_the_right_message(projects, tmp_path, board, rel, old,
                                                        new, expected):
    problems = [str(p) for p in lint_project(corrupt(projects, tmp_path, board, rel, old, new),
                                             board)]
    assert any(re.search(expected, p) for p in problems), problems
    assert len(problems) <= 3, problems          # the fault, not a cascade


def test_check_project_raises_listing_every_problem(projects, tmp_path):
    folder = corrupt(projects, tmp_path, "pynq-z1", "src/vtalab_pynq_z1.xdc", "R14", "Y99")
    with pytest.raises(FpgaError, match=r"must lint clean, not have 1 problem\(s\):\n  "
                                        r"src/vtalab_pynq_z1\.xdc:2: set_property: pin"):
        check_project(folder, "pynq-z1")


def test_lint_is_for_vendor_boards_only(tmp_path):
    with pytest.raises(FpgaError, match=r"must be a Vivado or Quartus board .* not ulx3s-85f"):
        lint_project(tmp_path, "ulx3s-85f")


def test_plan_only_says_lint_ok_and_a_faulty_plan_stops_the_build(monkeypatch, tmp_path,
                                                                  capsys):
    import vtalab.fpga.vendor_lint as vendor_lint
    from vtalab.cli import main
    from vtalab.fpga.vendor_lint.script import Problem
    argv = ["build", "--board", "de10-nano", "--config", "tiny", "--plan-only",
            "--out", str(tmp_path)]
    assert main(argv) == 0
    assert "  lint: ok\n" in capsys.readouterr().out
    fault = Problem("build.tcl", 3, "project_new", "a planted fault")
    monkeypatch.setattr(vendor_lint, "lint_project", lambda *args: [fault])
    assert main(argv) == 1
    assert "lint: 1 problem(s)\n    build.tcl:3: project_new: a planted fault" in \
        capsys.readouterr().out
    monkeypatch.setattr("shutil.which", lambda tool: f"/opt/{tool}")     # as if installed
    monkeypatch.setattr("subprocess.run", lambda *a, **k: pytest.fail("the tool ran"))
    with pytest.raises(FpgaError, match="must lint clean before quartus_sh runs, not have 1"):
        build_board("de10-nano", out_dir=tmp_path, cfg=preset("tiny"),
                    progress=lambda line: None)
