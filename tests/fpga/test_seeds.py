"""Seed sweeps (fpga/seeds.py): stop at the first build that meets timing, else keep the
fastest; the chosen bitstream and report land in the output folder. No tools needed: the
builds are stand-ins that write what a build writes."""
import json

import pytest

from vtalab.fpga import FpgaError, get_board
from vtalab.fpga import seeds as sweep
from vtalab.fpga.report import make_report
from vtalab.fpga.resources import estimate


def fake_builds(monkeypatch, fmax_by_seed):
    calls = []

    def build_board(board, out_dir, progress, cfg, seed):
        calls.append(seed)
        board = get_board(board)
        cfg = board.cfg()
        nextpnr = {"utilization": {"lut": {"used": 1, "available": 2}},
                   "fmax": {"clk": {"achieved_mhz": fmax_by_seed[seed], "constraint_mhz":
                                    cfg.clock_mhz}}}
        report = make_report(board, cfg, nextpnr, estimate(cfg, board), {}, cfg.clock_mhz)
        out_dir.mkdir(parents=True)
        (out_dir / "top.bit").write_text(f"bitstream of seed {seed}")
        return report

    monkeypatch.setattr(sweep, "build_board", build_board)
    return calls


def test_the_sweep_stops_at_the_first_seed_that_meets_timing(monkeypatch, tmp_path):
    clock = get_board("ulx3s-85f").cfg().clock_mhz
    calls = fake_builds(monkeypatch, {1: clock - 3, 2: clock + 1, 3: clock + 9})
    report = sweep.build_seeds("ulx3s-85f", [1, 2, 3], out_dir=tmp_path, progress=print)
    assert calls == [1, 2]
    assert report["seed"] == 2 and report["timing_met"]
    assert [t["seed"] for t in report["seeds_tried"]] == [1, 2]
    assert (tmp_path / "top.bit").read_text() == "bitstream of seed 2"
    assert json.loads((tmp_path / "report.json").read_text())["seed"] == 2
    assert f"placement seed 2 (MHz by seed: 1: {clock - 3:.1f}, 2: {clock + 1:.1f})" in (
        tmp_path / "summary.txt").read_text()


def test_without_a_seed_that_meets_timing_the_fastest_is_kept(monkeypatch, tmp_path):
    clock = get_board("ulx3s-85f").cfg().clock_mhz
    calls = fake_builds(monkeypatch, {4: clock - 9, 5: clock - 2, 6: clock - 5})
    report = sweep.build_seeds("ulx3s-85f", [4, 5, 6], out_dir=tmp_path, progress=print)
    assert calls == [4, 5, 6]
    assert report["seed"] == 5 and not report["timing_met"]
    assert report["fmax_mhz"] == clock - 2
    assert (tmp_path / "top.bit").read_text() == "bitstream of seed 5"


@pytest.mark.parametrize("seeds, board, message", [
    ([], "ulx3s-85f", "non-empty list of distinct"),
    ([1, 1], "ulx3s-85f", "non-empty list of distinct"),
    ([1, 2], "pynq-z1", "open-flow boards only, not pynq-z1"),
])
def test_bad_seed_lists_are_refused_before_any_build(monkeypatch, tmp_path, seeds, board,
                                                     message):
    calls = fake_builds(monkeypatch, {})
    with pytest.raises(FpgaError, match=message):
        sweep.build_seeds(board, seeds, out_dir=tmp_path)
    assert calls == []


def test_vtalab_build_seeds_runs_the_sweep(monkeypatch, tmp_path, capsys):
    from vtalab.cli import main
    clock = get_board("orangecrab-25f").cfg().clock_mhz
    calls = fake_builds(monkeypatch, {7: clock - 1, 8: clock + 2})
    assert main(["build", "--board", "orangecrab-25f", "--seeds", "7", "8",
                 "--out", str(tmp_path)]) == 0
    assert calls == [7, 8]
    assert "seed 8 meets timing" in capsys.readouterr().out
    assert main(["build", "--board", "orangecrab-25f", "--seeds", "7", "--plan-only"]) == 2
    assert "--seeds must come without --plan-only" in capsys.readouterr().err


def _synthesized(tmp_path, cfg, board=None):
    """A folder as a build leaves it after synthesis: netlist, constraints, script, report."""
    board = board or get_board("ulx3s-85f")
    nextpnr = {"utilization": {"lut": {"used": 1, "available": 2}},
               "fmax": {"clk": {"achieved_mhz": 90.0, "constraint_mhz": cfg.clock_mhz}}}
    report = make_report(board, cfg, nextpnr, estimate(cfg, board),
                         {"elaborate": 5.0, "yosys": 50.0, "nextpnr_ecp5": 900.0},
                         cfg.clock_mhz)
    tmp_path.mkdir(parents=True)
    (tmp_path / "report.json").write_text(json.dumps(report))
    for name in ("top.json", "top.lpf"):
        (tmp_path / name).write_text(name)
    (tmp_path / "build_top.sh").write_text(
        '"$YOSYS" -q -l top.rpt top.ys\n'
        '"$NEXTPNR_ECP5" --quiet --seed 1 --json top.json --lpf top.lpf --textcfg top.config\n'
        '"$ECPPACK" --compress --input top.config --bit top.bit\n')
    return tmp_path


def test_placing_again_runs_nextpnr_and_ecppack_with_the_new_seed_only(monkeypatch, tmp_path):
    from vtalab.fpga import build
    cfg = get_board("ulx3s-85f").cfg()
    src = _synthesized(tmp_path / "first", cfg)
    ran = {}

    def place_route_pack(board, cfg_, est, out_dir, steps, env, progress, times, clock,
                         outreg, seed):
        ran.update(steps=steps, times=dict(times), seed=seed, files=sorted(
            p.name for p in out_dir.iterdir()))
        return {"seed": seed}

    monkeypatch.setattr(build, "_place_route_pack", place_route_pack)
    monkeypatch.setattr("vtalab.fpga.toolchain.tool_env", lambda: {})
    assert build.place_and_route_again(src, 3, tmp_path / "s3") == {"seed": 3}
    assert [var for var, _ in ran["steps"]] == ["NEXTPNR_ECP5", "ECPPACK"]
    nextpnr_args = ran["steps"][0][1]
    assert nextpnr_args[nextpnr_args.index("--seed") + 1] == "3"
    assert ran["times"] == {"elaborate": 5.0, "yosys": 50.0} and ran["seed"] == 3
    assert ran["files"] == ["top.json", "top.lpf"]


def test_placing_again_keeps_the_lut_multipliers_of_the_first_build(monkeypatch, tmp_path):
    from dataclasses import replace

    from vtalab.fpga import build
    board = replace(get_board("ulx3s-85f"), hard_dsp=False, gemm_dsps=None)
    cfg = board.cfg().replace(block_out=16, alu_lanes=0)   # 117 GEMM products from LUTs
    seen = {}

    def place_route_pack(board_, cfg_, est, *args, seed):
        seen.update(hard_dsp=board_.hard_dsp, gemm_dsps=board_.gemm_dsps,
                    lut_products=est.detail["lut_products"])
        return {"seed": seed}
    monkeypatch.setattr(build, "_place_route_pack", place_route_pack)
    monkeypatch.setattr("vtalab.fpga.toolchain.tool_env", lambda: {})
    build.place_and_route_again(_synthesized(tmp_path / "first", cfg, board), 2, tmp_path / "s2")
    assert seen == {"hard_dsp": False, "gemm_dsps": None, "lut_products": 117}
    # the board's own cap: every product from LUTs
    preset_board = get_board("ulx3s-85f")
    src = _synthesized(tmp_path / "preset", preset_board.cfg(), preset_board)
    build.place_and_route_again(src, 2, tmp_path / "p2")
    assert seen == {"hard_dsp": True, "gemm_dsps": 0, "lut_products": 128}


def test_placing_again_refuses_another_config(tmp_path):
    from vtalab.fpga.build import place_and_route_again
    cfg = get_board("ulx3s-85f").cfg()
    src = _synthesized(tmp_path / "first", cfg)
    with pytest.raises(FpgaError, match=r"the config must be the one built in .*first"):
        place_and_route_again(src, 2, tmp_path / "s2", cfg=cfg.replace(block_out=4))
    with pytest.raises(FpgaError, match=r"report.json must exist"):
        place_and_route_again(tmp_path / "nothing", 2, tmp_path / "s2")


def test_vtalab_build_lut_multipliers_lifts_the_dsp_limit(monkeypatch, tmp_path):
    from vtalab import cli
    from vtalab.fpga import build
    boards = []

    def build_board(board, plan_only, out_dir, cfg, seed, progress):
        boards.append(get_board(board))
        return {}
    monkeypatch.setattr(build, "build_board", build_board)
    assert cli.main(["build", "--board", "ulx3s-85f", "--lut-multipliers"]) == 0
    assert cli.main(["build", "--board", "ulx3s-85f"]) == 0
    assert [b.hard_dsp for b in boards] == [False, True]


def test_a_seed_that_fails_to_route_is_recorded_and_the_sweep_goes_on(monkeypatch, tmp_path):
    from vtalab.fpga.errors import PlaceRouteError
    clock = get_board("ulx3s-85f").cfg().clock_mhz
    calls = fake_builds(monkeypatch, {2: clock - 4, 3: clock - 6})
    built = sweep.build_board

    def failing_first(board, out_dir, progress, cfg, seed):
        if seed == 1:
            calls.append(seed)
            raise PlaceRouteError("place and route (nextpnr-ecp5) must succeed, not exit "
                                  "with 1 (log x):\nInfo: ...\nERROR: Failed to route arc "
                                  "0.0 of net 'pll.reset'\n0 warnings, 1 error")
        return built(board, out_dir, progress, cfg, seed)
    monkeypatch.setattr(sweep, "build_board", failing_first)
    report = sweep.build_seeds("ulx3s-85f", [1, 2, 3], out_dir=tmp_path, progress=print)
    assert calls == [1, 2, 3] and report["seed"] == 2
    assert report["seeds_tried"][0] == {"seed": 1, "fmax_mhz": None, "timing_met": False,
                                        "error": "ERROR: Failed to route arc 0.0 of net "
                                                 "'pll.reset'"}
    assert "MHz by seed: 1: no route, 2: " in (tmp_path / "summary.txt").read_text()

    def never_routes(board, out_dir, progress, cfg, seed):
        raise PlaceRouteError("nextpnr failed\nERROR: no")
    monkeypatch.setattr(sweep, "build_board", never_routes)
    with pytest.raises(PlaceRouteError, match=r"one of seeds \[4, 5\], not fail for each: "
                                              r"4: ERROR: no; 5: ERROR: no"):
        sweep.build_seeds("ulx3s-85f", [4, 5], out_dir=tmp_path / "b", progress=print)
