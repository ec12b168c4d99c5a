"""A real ECP5 bitstream with the YoWASP tools from pip, for the OrangeCrab-25F preset
(1x16x4 with 41 GEMM products from carry-cell rows, the smallest board config: the whole core, PLL,
on-chip DRAM and UART bridge).

Takes minutes (the first YoWASP call also compiles its WASM into ~/.cache/YoWASP, or
YOWASP_CACHE_DIR): deselect with ``-m "not bitstream"``.
"""
import json

import pytest

from vtalab.fpga import get_board

pytest.importorskip("amaranth_boards")


@pytest.mark.bitstream
def test_orangecrab_bitstream_and_report(tmp_path):
    from vtalab.fpga.build import build_board
    from vtalab.fpga.toolchain import missing_tools
    missing = missing_tools()
    if missing:
        pytest.skip(f"open-flow tools not installed: {', '.join(missing)}")
    board = get_board("orangecrab-25f")
    lines = []
    report = build_board(board, out_dir=tmp_path, progress=lines.append)
    bitstream = tmp_path / "top.bit"
    assert bitstream.exists() and bitstream.stat().st_size > 10_000
    saved = json.loads((tmp_path / "report.json").read_text())
    assert saved["fingerprint"] == board.cfg().fingerprint() == report["fingerprint"]
    util = saved["utilization"]
    for resource in ("lut", "ff", "dsp", "bram"):
        assert 0 < util[resource]["used"] <= util[resource]["available"], resource
    assert util["dsp"]["available"] == board.capacity["dsp"]
    assert util["bram"]["available"] == board.capacity["bram"]
    # The estimate made before the build matches what nextpnr placed.
    assert abs(util["dsp"]["used"] - saved["estimate"]["dsp"]) <= 2
    assert abs(util["bram"]["used"] - saved["estimate"]["bram"]) <= 2
    assert saved["fmax_mhz"] > 0 and saved["core_clock"] in saved["fmax"]
    macs = board.cfg().macs_per_cycle
    assert saved["peak_gops_at_fmax"] == pytest.approx(macs * 2 * saved["fmax_mhz"] / 1000,
                                                      abs=1e-3)
    # the SRAM read registers moved into the block RAMs (fpga/bram_outreg.py)
    outreg = saved["bram_output_registers"]
    assert outreg["brams"] > 0 and outreg["registers"] >= outreg["brams"]
    assert any("output registers" in line for line in lines)
    assert "MHz achieved" in (tmp_path / "summary.txt").read_text()
    assert any("place and route" in line for line in lines)
