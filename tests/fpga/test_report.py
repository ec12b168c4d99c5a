"""nextpnr report parsing, the summary, and the ECP5 build plan (no tools needed)."""
import json

import pytest

from vtalab.fpga import FpgaError, ResourceError, get_board
from vtalab.fpga.report import (cell_sources, make_report, parse_nextpnr_report,
                                slowest_endpoints, summary, write_report)
from vtalab.fpga.resources import estimate
from vtalab.spec import Config

NEXTPNR = {
    "utilization": {
        "TRELLIS_COMB": {"used": 30000, "available": 83640},
        "TRELLIS_FF": {"used": 9000, "available": 83640},
        "MULT18X18D": {"used": 153, "available": 156},
        "DP16KD": {"used": 114, "available": 208},
        "EHXPLLL": {"used": 1, "available": 4},
    },
    "fmax": {"$glbnet$clk": {"achieved": 61.25, "constraint": 100.0},
             "$glbnet$clk25_0__i": {"achieved": 400.0, "constraint": 25.0}},
}


def test_parse_and_report(tmp_path):
    path = tmp_path / "top.report.json"
    path.write_text(json.dumps(NEXTPNR))
    parsed = parse_nextpnr_report(path)
    assert parsed["utilization"]["dsp"] == {"used": 153, "available": 156}
    assert parsed["utilization"]["bram"] == {"used": 114, "available": 208}
    assert parsed["fmax"]["clk"]["achieved_mhz"] == 61.25
    board = get_board("ulx3s-85f")
    cfg = board.cfg()
    report = make_report(board, cfg, parsed, estimate(cfg, board), {"yosys": 100.0}, 100.0)
    assert report["core_clock"] == "clk" and report["fmax_mhz"] == 61.25
    assert not report["timing_met"]
    assert report["peak_gops"] == pytest.approx(128 * 2 * 61.25 / 1000, abs=1e-3)
    assert report["gops_per_dsp"] == pytest.approx(128 * 2 * 61.25 / 1000 / 153, abs=1e-3)
    assert report["route_target_mhz"] == 100.0
    json_path, text_path = write_report(report, tmp_path)
    assert json.loads(json_path.read_text())["utilization"]["lut"]["used"] == 30000
    text = text_path.read_text()
    assert "dsp" in text and "153" in text and "FAILED" in text and "61.2 MHz" in text
    assert "0.10 GOPS per DSP used" in text
    assert summary(report) + "\n" == text


def _end(cell, port, late, event="posedge $glbnet$clk"):
    return {"cell": cell, "port": port, "delay": [1.0, late], "event": event}


def test_slowest_endpoints_are_grouped_by_the_registers_source_line(tmp_path):
    nets = [
        {"net": "a", "endpoints": [_end("pipe.sum7_TRELLIS_FF_Q", "DI", 10.9),
                                   _end("pipe.sum7_TRELLIS_FF_Q_1", "DI", 10.5),
                                   _end("pipe.sum7_TRELLIS_FF_Q_2", "DI", 4.0)]},
        {"net": "b", "endpoints": [_end("loop.i_TRELLIS_FF_Q", "CE", 11.7),
                                   _end("loop.i_TRELLIS_FF_Q", "DI", 6.0)]},
        {"net": "c", "endpoints": [_end("core.inp_sram.mem.0.0", "ADB4", 9.0),
                                   _end("uart.rx_TRELLIS_FF_Q", "M", 30.0, "<async>")]},
    ]
    netlist = {"modules": {"top": {"cells": {
        "pipe.sum7_TRELLIS_FF_Q": {"attributes": {"src": "/x/vtalab/hw/exec_pipe.py:216|/y"}},
        "pipe.sum7_TRELLIS_FF_Q_1": {"attributes": {"src": "/x/vtalab/hw/exec_pipe.py:216"}},
        "pipe.sum7_TRELLIS_FF_Q_2": {"attributes": {"src": "/x/vtalab/hw/exec_pipe.py:216"}},
        "loop.i_TRELLIS_FF_Q": {"attributes": {"src": "/x/vtalab/hw/uop_loop.py:49.5-49.9"}},
        "core.inp_sram.mem.0.0": {"attributes": {"src": "/share/lattice/brams_map_16kd.v:131"}},
    }}}}
    path = tmp_path / "top.json"
    path.write_text(json.dumps(netlist))
    rows = slowest_endpoints(nets, cell_sources(path))
    assert [r["where"] for r in rows] == ["hw/uop_loop.py:49", "hw/exec_pipe.py:216",
                                          "core.inp_sram.mem.0.0"]
    assert rows[0] == {"where": "hw/uop_loop.py:49", "arrival_ns": 11.7, "port": "CE",
                       "endpoints": 1}
    assert rows[1]["endpoints"] == 2 and rows[1]["arrival_ns"] == 10.9   # 4.0 is not late
    assert len(slowest_endpoints(nets, {}, count=1)) == 1
    assert cell_sources(tmp_path / "missing.json") == {}


def test_bad_report_is_named(tmp_path):
    path = tmp_path / "r.json"
    path.write_text("{}")
    with pytest.raises(FpgaError, match="must have utilization and fmax"):
        parse_nextpnr_report(path)
    with pytest.raises(FpgaError, match="must be readable JSON"):
        parse_nextpnr_report(tmp_path / "missing.json")


def test_config_that_does_not_fit_fails_before_any_tool(tmp_path):
    from vtalab.fpga.build import build_board
    out = tmp_path / "never"
    with pytest.raises(ResourceError, match="block RAMs must be at most 208"):
        build_board("ulx3s-85f", out_dir=out, cfg=Config(), progress=lambda m: None)
    assert not out.exists()


def test_ecp5_plan_only_writes_the_build_script(tmp_path):
    pytest.importorskip("amaranth_boards")
    from vtalab.fpga.build import build_board
    from vtalab.fpga.toolchain import script_steps
    board = get_board("orangecrab-25f")
    report = build_board(board, plan_only=True, out_dir=tmp_path, progress=lambda m: None)
    assert report["plan_only"] and report["estimate"]["dsp"] <= board.capacity["dsp"]
    steps = script_steps(tmp_path / "build_top.sh")
    assert [var for var, _ in steps] == ["YOSYS", "NEXTPNR_ECP5", "ECPPACK"]
    nextpnr_args = steps[1][1]
    assert "--report" in nextpnr_args and "--25k" in nextpnr_args
    assert "--detailed-timing-report" in nextpnr_args
    # the SRAMs' same-cycle read/write collisions are "undefined" for Yosys (hw/sram.py)
    script = (tmp_path / "top.ys").read_text()
    assert "memory_collect" in script and "a:vtalab_collision=undefined" in script
    assert script.index("setparam") < script.index("synth_ecp5")
    assert 'attribute \\vtalab_collision "undefined"' in (tmp_path / "top.il").read_text()
    lpf = (tmp_path / "top.lpf").read_text()
    assert "uart" in lpf and "FREQUENCY" in lpf
    assert "EHXPLLL" in (tmp_path / "top.il").read_text()


def test_the_boards_placer_and_rip_up_reach_nextpnr_and_a_bad_placer_is_refused(tmp_path):
    pytest.importorskip("amaranth_boards")
    from dataclasses import replace

    from vtalab.fpga.build import _placer_of, build_board
    from vtalab.fpga.toolchain import script_steps
    board = replace(get_board("orangecrab-25f"), placer="static")
    build_board(board, plan_only=True, out_dir=tmp_path, progress=lambda m: None)
    steps = script_steps(tmp_path / "build_top.sh")
    args = steps[1][1]
    assert args[args.index("--placer") + 1] == "static" and _placer_of(steps) == "static"
    assert "--tmg-ripup" in args
    build_board(replace(board, timing_ripup=False), plan_only=True, out_dir=tmp_path / "b",
                progress=lambda m: None)
    assert "--tmg-ripup" not in script_steps(tmp_path / "b" / "build_top.sh")[1][1]
    assert _placer_of([("NEXTPNR_ECP5", ["--seed", "1"])]) == "heap"
    with pytest.raises(FpgaError, match="placer of board 'orangecrab-25f' must be one of "
                                        "\\('heap', 'static', 'sa'\\), not 'quick'"):
        replace(board, placer="quick")
    with pytest.raises(FpgaError, match="timing_ripup of board 'orangecrab-25f' must be True "
                                        "or False, not 'yes'"):
        replace(board, timing_ripup="yes")


def test_undefined_read_collisions_cover_every_marked_port_count():
    from amaranth.back import rtlil

    from vtalab.fpga.build import _collision_script
    from vtalab.hw.sram import COLLISION_MAX_READ_PORTS, Sram
    from vtalab.spec import ConfigError

    class Open:
        vtalab_sram_collisions = "undefined"
    script = _collision_script()
    for ports in range(1, COLLISION_MAX_READ_PORTS + 1):
        assert f"r:RD_PORTS={ports} " in script
        rtlil.convert(Sram(8, 16, ports), platform=Open())
    with pytest.raises(ConfigError, match="at most 4 read ports, not 5"):
        rtlil.convert(Sram(8, 16, COLLISION_MAX_READ_PORTS + 1), platform=Open())
