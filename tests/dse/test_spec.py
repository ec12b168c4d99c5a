"""The sweep spec: a valid TOML spec parses into its parts, and every mistake is a DseError
naming the key, the value and what it must be."""
from __future__ import annotations

import pytest

from vtalab.dse.points import check_point, make_config, plan_points
from vtalab.dse.spec import DseError, load_spec, parse_spec

from .helpers import write_spec

BASE = {"base": {"config": "tiny"}, "sweep": {"block_out": [8, 16]},
        "workload": [{"conv": [8, 8, 8, 8, 3, 1, 1]}]}


def spec_with(**changes):
    raw = {k: (dict(v) if isinstance(v, dict) else list(v)) for k, v in BASE.items()}
    for key, value in changes.items():
        section, _, name = key.partition("__")
        if name:
            raw.setdefault(section, {})[name] = value
        else:
            raw[section] = value
    return parse_spec(raw)


def test_a_spec_parses_with_defaults(tmp_path):
    spec = load_spec(write_spec(tmp_path))
    assert spec.base.name == "tiny" and spec.sweep == {"block_out": [8, 16], "bus_bits": [64, 128]}
    assert [w.name for w in spec.workloads] == ["c3", "fc"]
    assert spec.workloads[0].args == {"kind": "conv", "batch": 1, "conv": [8, 8, 8, 16, 3, 1, 1]}
    assert (spec.strategy, spec.cycles, spec.area_flow, spec.budget) == \
        ("grid", "model", "estimate", 16)
    assert spec.report == {"x": "dsp", "y": "cycles", "workload": "c3"}
    assert spec.grid_size == 4 and spec.path.endswith("spec.toml")


@pytest.mark.parametrize("changes, words", [
    ({"colour": 1}, ["colour", "one of the sections"]),
    ({"sweep": {"block_width": [8]}}, ["sweep.block_width", "one of the Config fields"]),
    ({"sweep": {"block_out": 8}}, ["sweep.block_out", "a non-empty list", "not 8"]),
    ({"sweep": {"block_out": []}}, ["sweep.block_out", "a non-empty list"]),
    ({"sweep": {"block_out": [8, "16"]}}, ["sweep.block_out", "integers", "'16'"]),
    ({"sweep": {"block_out": [8, 8]}}, ["sweep.block_out", "without repeats"]),
    ({"search__strategy": "annealing"}, ["search.strategy", "'grid'", "'annealing'"]),
    ({"search__budget": 0}, ["search.budget", "an integer from 1", "not 0"]),
    ({"search__speed": 1}, ["search.speed", "one of the keys"]),
    ({"metrics__cycles": "board"}, ["metrics.cycles", "'rtl'", "'board'"]),
    ({"metrics__rtl_sample": 99}, ["metrics.rtl_sample", "to 64", "99"]),
    ({"area__flow": "vivado"}, ["area.flow", "'pnr'", "'vivado'"]),
    ({"area__flow": "synth", "area__board": "pynq-z1"}, ["area.board", "open-flow"]),
    ({"report__x": "lut"}, ["report.x", "LUTs/FFs need synth or pnr", "'lut'"]),
    ({"base__config": "huge"}, ["base.config", "preset", "'huge'"]),
    ({"workload": []}, ["workload", "one or more"]),
    ({"workload": [{"conv": [8, 8, 8, 8, 3, 1, 1], "dense": [8, 8]}]},
     ["workload[0]", "exactly one of"]),
    ({"workload": [{"conv": [8, 8, 8, 8, 3]}]}, ["workload[0].conv", "[channels,", "not [8"]),
    ({"workload": [{"conv": [8, 8, 8, 8, 3, 1, 3]}]}, ["workload[0].conv", "pad below"]),
    ({"workload": [{"model": "vgg"}]}, ["workload[0].model", "'resnet18'", "'vgg'"]),
    ({"workload": [{"onnx": "missing.onnx"}]}, ["workload[0].onnx", "an existing ONNX"]),
    ({"workload": [{"dense": [8, 8]}, {"dense": [8, 8]}]}, ["workload[1].name", "unique"]),
    ({"workload": [{"dense": [8, 8], "size": 3}]}, ["workload[0].size", "one of the keys"]),
])
def test_spec_errors_name_the_key_the_value_and_the_rule(changes, words):
    with pytest.raises(DseError) as err:
        spec_with(**changes)
    for word in words:
        assert word in str(err.value), (word, str(err.value))
    assert " must be " in str(err.value)


def test_a_file_error_names_the_file(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text("[sweep\n")
    with pytest.raises(DseError, match="bad.toml must be valid TOML"):
        load_spec(bad)
    with pytest.raises(DseError, match=r"spec.toml: sweep.block_in must be"):
        load_spec(write_spec(tmp_path, extra_sweep="block_in = 8"))


def test_points_out_depth_follows_acc_depth_and_invalid_points_keep_the_config_error():
    spec = spec_with(sweep={"acc_depth": [128, 100]})
    cfg = make_config(spec, {"acc_depth": 128})
    assert cfg.acc_depth == cfg.out_depth == 128 and cfg.block_in == 8
    cfg, why = check_point(spec, {"acc_depth": 100})
    assert cfg is None
    assert why == "ConfigError: acc_depth must be a power of two from 2 to 65536, not 100"


def test_constraints_reject_points_with_the_reason():
    # ulx3s-85f builds its GEMM products from carry rows: the DSPs are the ALU's 32-bit MUL
    # lanes (3 each, one lane per output element) and the store's one
    spec = spec_with(sweep={"block_in": [8, 16], "block_out": [8, 16]},
                     constraints={"max_dsp": 30})
    plan = plan_points(spec)
    assert [p for p, _ in plan.points] == [{"block_in": 8, "block_out": 8},
                                           {"block_in": 16, "block_out": 8}]
    assert len(plan.rejected) == 2
    assert all(why == "constraint: estimated DSPs must be at most 30 (constraints.max_dsp), "
                      "not 49" for _, _, why in plan.rejected)
    fits = spec_with(sweep={"block_in": [16], "block_out": [16, 32]},
                     constraints={"fits_board": True})
    (point, cfg, why), = plan_points(fits).rejected
    assert point == {"block_in": 16, "block_out": 32}
    assert "does not fit ulx3s-85f" in why and "block RAMs must be at most 208, not 237" in why


def test_budget_below_the_grid_is_an_error_and_random_samples_the_budget():
    spec = spec_with(sweep={"block_out": [8, 16, 32], "bus_bits": [64, 128]},
                     search={"budget": 4})
    with pytest.raises(DseError, match="search.budget must be at least the 6 runnable grid"):
        plan_points(spec)
    spec.strategy = "random"
    picked = plan_points(spec).points
    assert len(picked) == 4 and len({str(p) for p, _ in picked}) == 4
    assert [p for p, _ in picked] == [p for p, _ in plan_points(spec).points]   # seeded
