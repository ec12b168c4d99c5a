"""Module files: save once, load and run many times; version and config checks."""
import json
import zipfile

import numpy as np
import pytest

from vtalab.compiler.exec import ModuleFileError, load_module, save_module
from vtalab.runtime import open_device

from .conftest import SIZE, samples


def test_round_trip_runs_identically(resnet_module, tmp_path):
    path = save_module(resnet_module, tmp_path / "r.vtl")
    loaded = load_module(path, "default")
    x = samples((1, 3, SIZE, SIZE), 1, 5)[0]
    want = resnet_module.run(x)[0]
    got = loaded.run(x)[0]
    out = resnet_module.outputs[0]
    assert np.array_equal(got[out], want[out])
    assert [s.name for s in loaded.steps] == [s.name for s in resnet_module.steps]
    assert not list(tmp_path.glob(".r.vtl.*"))  # atomic write left no temporary


def test_one_binding_serves_many_runs(resnet_module):
    with open_device("fsim", resnet_module.cfg, dram_bytes=32 << 20) as dev:
        outs = [resnet_module.run(x, device=dev)[0][resnet_module.outputs[0]]
                for x in samples((1, 3, SIZE, SIZE), 2, 9)]
        again = resnet_module.run(samples((1, 3, SIZE, SIZE), 2, 9)[0], device=dev)[0]
    assert np.array_equal(again[resnet_module.outputs[0]], outs[0])


def _rewrite_manifest(src, dst, change):
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w") as zout:
        for item in zin.infolist():
            data = zin.read(item)
            if item.filename == "manifest.json":
                manifest = json.loads(data)
                change(manifest)
                data = json.dumps(manifest)
            zout.writestr(item, data)


def test_version_config_and_corruption_are_clear_errors(resnet_module, tmp_path):
    path = save_module(resnet_module, tmp_path / "r.vtl")
    with pytest.raises(ModuleFileError, match="config of .* must be block8"):
        load_module(path, "block8")
    old = tmp_path / "old.vtl"
    _rewrite_manifest(path, old, lambda m: m.update(version=0))
    with pytest.raises(ModuleFileError, match="version of .* must be 1"):
        load_module(old)
    forged = tmp_path / "forged.vtl"
    _rewrite_manifest(path, forged, lambda m: m.update(fingerprint="0" * 16))
    with pytest.raises(ModuleFileError, match="fingerprint"):
        load_module(forged)
    cut = tmp_path / "cut.vtl"
    cut.write_bytes(path.read_bytes()[:1000])
    with pytest.raises(ModuleFileError, match="must be a complete vtalab module"):
        load_module(cut)
    with pytest.raises(ModuleFileError, match="must exist"):
        load_module(tmp_path / "nope.vtl")


def test_device_config_must_match(resnet_module):
    from vtalab.spec.errors import DeviceError
    with open_device("fsim", "block8") as dev:
        with pytest.raises(DeviceError, match="device config must be the module's default"):
            resnet_module.run(samples((1, 3, SIZE, SIZE), 1)[0], device=dev)


def test_relocated_encoding_matches_a_full_re_encode(resnet_module):
    """Program.encode re-encodes only the relocated instructions; that must equal
    decode + relocate + encode of the whole stream, and move dram_base by base / size."""
    from vtalab.spec import Isa
    cfg = resnet_module.cfg
    programs = [s.kernel for s in resnet_module.steps if s.target == "accel"]
    assert programs and any(p.relocs for p in programs)
    for prog in programs:
        bases = {name: 4096 * (k + 3) for k, name in enumerate(sorted({b for _, b in prog.relocs}))}
        expected = Isa(cfg).encode_program(prog.instructions(bases))
        assert prog.encode(bases) == expected
        raw, placed = prog.insns, Isa(cfg).decode_program(prog.encode(bases))
        for index, name in prog.relocs:
            moved = placed[index]
            size = 4 if name == "__uop__" else cfg.entry_bytes(moved.mem.buffer)
            assert moved.dram_base == raw[index].dram_base + bases[name] // size
