"""Board.timing_margin: nextpnr times the design for a faster clock than the PLL makes."""
from dataclasses import replace

import pytest

from vtalab.fpga import FpgaError, get_board
from vtalab.fpga.build import build_board
from vtalab.fpga.lpf import with_timing_margin
from vtalab.fpga.report import summary

LPF = ('BLOCK ASYNCPATHS;\nLOCATE COMP "clk25_0__io" SITE "G2";\n'
       'FREQUENCY PORT "clk25_0__io" 25000000.0 HZ;\n# (add_preferences placeholder)\n')


def test_lpf_input_clocks_scaled_and_nothing_else():
    out = with_timing_margin(LPF, 0.05)
    assert 'FREQUENCY PORT "clk25_0__io" 26250000.0 HZ;' in out
    assert out.replace("26250000.0", "25000000.0") == LPF
    with pytest.raises(FpgaError, match="must constrain an input clock"):
        with_timing_margin("BLOCK ASYNCPATHS;\n", 0.05)


def _lpf_frequency(out_dir) -> float:
    for line in (out_dir / "top.lpf").read_text().splitlines():
        if line.startswith("FREQUENCY PORT"):
            return float(line.split()[3])
    raise AssertionError("no FREQUENCY PORT line")


def test_plan_carries_the_board_margin(tmp_path):
    board = get_board("ulx3s-85f")
    assert board.timing_margin == 0.05 and board.route_target_mhz(100.0) == 105.0
    build_board(board, plan_only=True, out_dir=tmp_path / "m", progress=lambda m: None)
    build_board(replace(board, timing_margin=0.0), plan_only=True, out_dir=tmp_path / "z",
                progress=lambda m: None)
    assert _lpf_frequency(tmp_path / "m") == pytest.approx(26.25e6)
    assert _lpf_frequency(tmp_path / "z") == pytest.approx(25e6)


@pytest.mark.parametrize("name, margin", [("ulx3s-85f", -0.1), ("ulx3s-85f", 0.6),
                                          ("ulx3s-85f", "5%"), ("pynq-z1", 0.05)])
def test_margin_checked(name, margin):
    with pytest.raises(FpgaError, match=f"timing_margin of board '{name}' must be 0 or, on an "
                                        "open-flow board, a fraction up to 0.5"):
        replace(get_board(name), timing_margin=margin)


def _report(achieved: float, constraint: float) -> dict:
    return {"board": "ulx3s-85f", "part": "LFE5U-85F", "config": {"name": "ulx3s-85f"},
            "block": "1x16x8", "macs_per_cycle": 128, "fingerprint": "f", "utilization": {},
            "core_clock": "clk", "clock_mhz": 100.0, "route_target_mhz": constraint,
            "fmax_mhz": achieved,
            "fmax": {"clk": {"achieved_mhz": achieved, "constraint_mhz": constraint}},
            "peak_gops": 25.6, "peak_gops_at_fmax": 26.0, "times_s": {}}


def test_summary_judges_the_pll_clock_not_the_route_target():
    assert "101.0 MHz achieved, 100.0 MHz wanted (met, placed and routed for 105.0 MHz)" \
        in summary(_report(101.0, 105.0))
    assert "99.0 MHz achieved, 100.0 MHz wanted (FAILED, placed and routed for 105.0 MHz)" \
        in summary(_report(99.0, 105.0))
    assert "101.0 MHz achieved, 100.0 MHz wanted (met)\n" in summary(_report(101.0, 100.0))
