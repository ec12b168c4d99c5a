"""Config: presets, derived values, persistence, fingerprint, errors naming the parameter."""
import subprocess
import sys

import pytest

from vtalab.spec import Config, ConfigError, load_config, preset, preset_names


def test_default_is_vtas_configuration():
    cfg = preset("default")
    assert (cfg.batch, cfg.block_in, cfg.block_out) == (1, 16, 16)
    assert (cfg.inp_bits, cfg.wgt_bits, cfg.acc_bits, cfg.out_bits) == (8, 8, 32, 8)
    assert (cfg.uop_depth, cfg.inp_depth, cfg.wgt_depth, cfg.acc_depth) == (8192, 2048, 1024, 2048)
    assert cfg.bus_bits == 64
    # VTA's buffer sizes in bytes: uop 32 KiB, inp 32 KiB, wgt 256 KiB, acc 128 KiB
    assert [cfg.buffer_bytes(b) for b in ("uop", "inp", "wgt", "acc")] == \
        [32 << 10, 32 << 10, 256 << 10, 128 << 10]
    assert cfg.entry_bytes("wgt") == 256 and cfg.entry_bytes("acc") == 64
    assert cfg.shift_bits == 5 and cfg.macs_per_cycle == 256


def test_presets_are_valid_and_distinct():
    names = preset_names()
    assert {"default", "tiny"} <= set(names)
    # Fingerprints tell hardware apart: equal exactly when the parameters are equal (a board
    # preset may reuse another preset's hardware, e.g. PYNQ-Z1 runs VTA's default).
    for a in names:
        for b in names:
            same = preset(a).hardware_dict() == preset(b).hardware_dict()
            assert (preset(a).fingerprint() == preset(b).fingerprint()) == same, (a, b)


def test_fingerprint_is_stable_across_processes():
    code = "from vtalab.spec import preset; print(preset('tiny').fingerprint())"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == preset("tiny").fingerprint()
    assert preset("tiny").replace(name="x").fingerprint() == preset("tiny").fingerprint()
    assert preset("tiny").replace(bus_bits=128).fingerprint() != preset("tiny").fingerprint()


@pytest.mark.parametrize("suffix", [".json", ".toml"])
def test_save_and_load_round_trip(tmp_path, suffix):
    cfg = preset("tiny").replace(bus_bits=256, clock_mhz=125.0)
    path = tmp_path / f"board{suffix}"
    cfg.save(path)
    again = load_config(path)
    assert again == cfg and again.name == "tiny"      # the name saved in the file wins
    assert [p.name for p in tmp_path.iterdir()] == [path.name]   # no temp file left behind


@pytest.mark.parametrize("changes, message", [
    ({"block_in": 12}, r"block_in must be a power of two from 1 to 256, not 12"),
    ({"batch": 0}, r"batch must be a power of two"),
    ({"inp_bits": 4}, r"inp_bits must be one of \(8, 16\), not 4"),
    ({"acc_depth": 3000, "out_depth": 3000}, r"acc_depth must be a power of two"),
    ({"uop_depth": 1 << 17}, r"uop_depth must be a power of two from 2 to 65536, not 131072"),
    ({"bus_bits": 96}, r"bus_bits must be one of \(64, 128, 256, 512\), not 96"),
    ({"out_depth": 1024}, r"out_depth must equal acc_depth"),
    ({"clock_mhz": -5}, r"clock_mhz must be a number"),
    ({"out_bits": 16, "acc_bits": 16, "inp_bits": 16}, None),
])
def test_invalid_values_name_the_parameter(changes, message):
    if message is None:
        Config(**changes)
        return
    with pytest.raises(ConfigError, match=message):
        Config(**changes)


def test_fields_that_overflow_the_instruction_are_rejected():
    # 64K-deep buffers widen the GEMM factors past the 128-bit instruction word.
    with pytest.raises(ConfigError, match="GEMM fields must fit in 128 bits"):
        Config(uop_depth=1 << 16, inp_depth=1 << 16, acc_depth=1 << 16, out_depth=1 << 16,
               wgt_depth=1 << 16)


def test_unknown_keys_and_bad_files(tmp_path):
    with pytest.raises(ConfigError, match="config parameter must be one of .* not 'blocks'"):
        Config.from_dict({"blocks": 4})
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(ConfigError, match="must be valid json"):
        load_config(bad)
    with pytest.raises(ConfigError, match="preset name"):
        load_config("no-such-preset")
    with pytest.raises(ConfigError, match="preset must be one of"):
        preset("huge")


def test_spec_import_stays_light():
    code = ("import sys, vtalab.spec; "
            "print(any(m.split('.')[0] in ('amaranth', 'numpy', 'llvmlite', 'onnx') "
            "or m.startswith('vtalab.compiler') for m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_alu_mul_bits_enters_the_fingerprint_only_away_from_its_default():
    tiny = preset("tiny")
    # the digest of the tiny preset before alu_mul_bits existed: caches keyed by it stay valid
    assert tiny.fingerprint() == "6890ccfad7546d81"
    assert tiny.replace(alu_mul_bits=0).fingerprint() == tiny.fingerprint()
    assert tiny.replace(alu_mul_bits=18).fingerprint() != tiny.fingerprint()
    assert tiny.replace(alu_mul_bits=32).fingerprint() != tiny.fingerprint()
    assert tiny.mul_bits == 32 and tiny.replace(alu_mul_bits=18).mul_bits == 18
    assert Config.from_dict(tiny.replace(alu_mul_bits=12).to_dict()).mul_bits == 12


@pytest.mark.parametrize("value", [1, 33, -4, True, 18.0])
def test_alu_mul_bits_errors_name_the_limit(value):
    with pytest.raises(ConfigError, match=r"alu_mul_bits must be 0 \(acc_bits\) or from 2 to "
                                          r"acc_bits \(32\), not"):
        preset("tiny").replace(alu_mul_bits=value)


def test_alu_lanes_set_the_beats_and_enter_the_fingerprint_only_when_set():
    tiny = preset("tiny")                                   # 1 x 8 accumulator lanes
    for param in ("alu_lanes", "alu_mul_lanes"):
        assert tiny.replace(**{param: 0}).fingerprint() == tiny.fingerprint()
        assert tiny.replace(**{param: 2}).fingerprint() != tiny.fingerprint()
    assert (tiny.alu_units, tiny.alu_beats, tiny.mul_lanes, tiny.mul_beats) == (8, 1, 8, 1)
    mul = [tiny.replace(alu_mul_lanes=n) for n in (1, 2, 8)]
    assert [(c.alu_beats, c.mul_lanes, c.mul_beats) for c in mul] == [(1, 1, 8), (1, 2, 4),
                                                                       (1, 8, 1)]
    alu = tiny.replace(alu_lanes=2)              # MUL: one multiplier per ALU lane
    assert (alu.alu_units, alu.alu_beats, alu.mul_lanes, alu.mul_beats) == (2, 4, 2, 4)
    assert alu.replace(alu_mul_lanes=1).mul_beats == 8
    assert Config.from_dict(tiny.replace(alu_lanes=4).to_dict()).alu_beats == 2


@pytest.mark.parametrize("value", [3, 16, -2, True, 2.0])
def test_alu_lanes_errors_name_the_limit(value):
    with pytest.raises(ConfigError, match=r"alu_lanes must be 0 \(one per element\) or a power "
                                          r"of two up to batch x block_out \(8\), not"):
        preset("tiny").replace(alu_lanes=value)


def test_alu_mul_lanes_are_at_most_the_alu_lanes():
    with pytest.raises(ConfigError, match=r"alu_mul_lanes must be 0 \(one per ALU lane\) or a "
                                          r"power of two up to the ALU lanes \(2\), not 4"):
        preset("tiny").replace(alu_lanes=2, alu_mul_lanes=4)
