"""Area of a design point: the estimate with the board-fit verdict, Yosys cell counts
turned into LUTs/FFs/DSPs/BRAMs, results cached by fingerprint and hardware hash; one real
synthesis of the OrangeCrab preset (minutes: marked bitstream)."""
from __future__ import annotations

import json

import pytest

from vtalab.dse import area
from vtalab.spec import preset


def test_estimate_says_whether_the_point_fits_the_board():
    fits = area.area_metrics(preset("ulx3s-85f"), "ulx3s-85f")
    # the GEMM's products from carry rows (the board's gemm_dsps=0); two ALU lanes with
    # an 18-bit MUL, one MULT18X18D each, and the store's multiplier
    assert (fits["dsp"], fits["bram"], fits["fits"], fits["fit_error"]) == (3, 119, True, None)
    assert fits["lut"] is None and fits["fmax_mhz"] is None
    big = area.area_metrics(preset("default"), "ulx3s-85f")
    assert big["dsp"] == 16 * 3 + 1 and not big["fits"]
    assert "block RAMs must be at most 208, not 334" in big["fit_error"]


def test_cell_counts_and_lut_weights(tmp_path):
    cells = {f"c{i}": {"type": t} for i, t in enumerate(
        ["LUT4"] * 5 + ["CCU2C"] * 2 + ["TRELLIS_DPR16X4"] + ["TRELLIS_FF"] * 3)}
    path = tmp_path / "top.json"
    path.write_text(json.dumps({"modules": {"top": {"cells": cells}}}))
    counts = area.cell_counts(path)
    assert counts == {"CCU2C": 2, "LUT4": 5, "TRELLIS_DPR16X4": 1, "TRELLIS_FF": 3}
    assert sum(n * counts.get(c, 0) for c, n in area.SYNTH_LUT_WEIGHT.items()) == 13
    path.write_text("{}")
    with pytest.raises(area.DseError, match="must be Yosys JSON with module top"):
        area.cell_counts(path)


def test_synthesis_is_cached_by_fingerprint_and_hardware_hash(tmp_path, monkeypatch):
    monkeypatch.setenv("VTALAB_CACHE", str(tmp_path))
    calls = []

    def fake_synth(cfg, board, work, progress):
        calls.append(cfg.fingerprint())
        return {"lut": 1000 + len(calls), "ff": 900, "dsp": 23, "bram": 23}
    monkeypatch.setattr(area, "_synth", fake_synth)
    cfg = preset("orangecrab-25f")
    first = area.area_metrics(cfg, "orangecrab-25f", "synth")
    again = area.area_metrics(cfg, "orangecrab-25f", "synth")
    assert calls == [cfg.fingerprint()] and first["lut"] == again["lut"] == 1001
    assert (first["cached"], again["cached"]) == (False, True)
    area.area_metrics(cfg.replace(bus_bits=128), "orangecrab-25f", "synth")
    monkeypatch.setattr(area, "hardware_hash", lambda: "changed-hw")
    assert area.area_metrics(cfg, "orangecrab-25f", "synth")["cached"] is False
    assert len(calls) == 3


@pytest.mark.slow
@pytest.mark.bitstream
def test_real_synthesis_of_the_orangecrab_preset(tmp_path, monkeypatch):
    pytest.importorskip("amaranth_boards")
    from vtalab.fpga.toolchain import missing_tools
    if missing_tools():
        pytest.skip(f"open-flow tools not installed: {', '.join(missing_tools())}")
    monkeypatch.setenv("VTALAB_CACHE", str(tmp_path))
    got = area.area_metrics(preset("orangecrab-25f"), "orangecrab-25f", "synth")
    est = got["estimate"]
    # 28 MULT18X18D: Yosys maps none of the 41 GEMM products built from LUTs to a DSP
    assert est["lut_products"] == 41
    assert (got["dsp"], got["bram"]) == (est["dsp"], est["bram"]) == (28, 42)
    assert 5000 < got["lut"] < 24288 and 3000 < got["ff"] < 24288
    assert got["fmax_mhz"] is None and got["cells"]["MULT18X18D"] == 28
    assert not list((tmp_path / "dse" / "build").glob("*/top.json"))   # netlist removed
