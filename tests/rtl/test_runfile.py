"""Saved programs (``vtalab sim``): the same file runs on fsim and on the RTL."""
import numpy as np
import pytest

from vtalab.runtime.runfile import load_program, run_program_file, save_fuzz_program
from vtalab.sim.fuzz import generate
from vtalab.spec import Isa, preset
from vtalab.spec.errors import DeviceError
from vtalab.spec.isa import FinishInsn

from .backends import BACKENDS, require_rtl


@pytest.fixture
def program_file(tmp_path):
    return save_fuzz_program(tmp_path / "fuzz.npz", generate(preset("tiny"), 4096, seed=5))


@pytest.mark.parametrize("backend", BACKENDS)
def test_saved_program_runs_and_prints_counters(program_file, backend):
    if backend == "rtl":
        require_rtl()
    lines = []
    counters = run_program_file(program_file, backend, echo=lines.append)
    assert counters["insn_finish"] == 1 and counters["alu_uops"] > 0
    assert "fuzz.npz" in lines[0] and "gemm_uops" in lines[-1]
    if backend == "rtl":
        assert counters["cycles"] > 0 and "cycles" in lines[-1]


def test_timeline_outputs(program_file, tmp_path):
    require_rtl()
    pytest.importorskip("matplotlib")
    png, trace = tmp_path / "t.png", tmp_path / "t.json"
    run_program_file(program_file, "rtl", timeline=png, trace_json=trace, echo=lambda s: None)
    assert png.stat().st_size > 0 and trace.stat().st_size > 0
    with pytest.raises(DeviceError, match="timeline needs backend rtl"):
        run_program_file(program_file, "fsim", timeline=png, echo=lambda s: None)


def test_raw_instruction_stream(tmp_path):
    path = tmp_path / "finish.bin"
    path.write_bytes(Isa(preset("tiny")).encode_program([FinishInsn()]))
    cfg, image, addr, count = load_program(path, "tiny")
    assert cfg.name == "tiny" and addr == 0 and count == 1 and image.dtype == np.uint8
    counters = run_program_file(path, "fsim", config="tiny", echo=lambda s: None)
    assert counters["insn_finish"] == 1
    (tmp_path / "bad.bin").write_bytes(b"123")
    with pytest.raises(DeviceError, match="program file must be"):
        load_program(tmp_path / "bad.bin")
