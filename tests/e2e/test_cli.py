"""The command line: every subcommand through ``vtalab.cli.main`` and one real subprocess."""
import json
import subprocess
import sys

import pytest

from vtalab.cli import main
from vtalab.spec import Isa, preset
from vtalab.spec.isa import FinishInsn, GemmInsn


def test_matmul_demo_runs_and_matches_numpy(capsys):
    assert main(["demo", "--matmul", "--config", "tiny", "--size", "32", "64", "48"]) == 0
    out = capsys.readouterr().out
    assert "matches numpy bit for bit" in out
    assert "bytes moved:" in out and "micro-ops:" in out


def test_matmul_demo_in_a_fresh_process():
    done = subprocess.run([sys.executable, "-m", "vtalab", "demo", "--matmul", "--size", "16",
                           "32", "32"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "matches numpy bit for bit" in done.stdout


def test_config_show_and_list(capsys, tmp_path):
    assert main(["config", "show", "tiny", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["block_in"] == 8 and data["name"] == "tiny"
    path = tmp_path / "mine.toml"
    preset("tiny").replace(bus_bits=128).save(path)
    assert main(["config", "show", str(path)]) == 0
    assert "bus_bits   128" in capsys.readouterr().out
    assert main(["config", "list"]) == 0
    assert "default" in capsys.readouterr().out


def test_bad_config_is_a_clear_error(capsys):
    assert main(["config", "show", "nope"]) == 2
    assert "config must be a preset name" in capsys.readouterr().err


def test_disasm_file_and_hex_words(capsys, tmp_path):
    isa = Isa(preset("default"))
    path = tmp_path / "prog.bin"
    path.write_bytes(isa.encode_program([GemmInsn(uop_end=5, iter_out=2), FinishInsn()]))
    assert main(["disasm", str(path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 2 and "uop_end=5" in lines[0] and "iter_out=2" in lines[0]
    assert lines[1].split()[1] == "FINISH"
    assert main(["disasm", hex(isa.encode(FinishInsn(pop_next=True)))]) == 0
    assert "pop_next=1" in capsys.readouterr().out
    assert main(["disasm", "xyz"]) == 2
    assert "hex word" in capsys.readouterr().err


def test_verilog_writes_the_core(tmp_path, capsys):
    pytest.importorskip("amaranth", reason="vtalab verilog needs the [hw] extra (amaranth)")
    out = tmp_path / "tiny.v"
    assert main(["verilog", "--config", "tiny", "-o", str(out)]) == 0
    text = out.read_text()
    assert "module vtalab_core" in text and "axi__awaddr" in text
    assert preset("tiny").fingerprint() in capsys.readouterr().out


def test_sim_runs_a_raw_program_and_prints_counters(tmp_path, capsys):
    isa = Isa(preset("default"))
    path = tmp_path / "prog.bin"
    path.write_bytes(isa.encode_program([GemmInsn(uop_end=1, iter_out=4), FinishInsn()]))
    assert main(["sim", str(path)]) == 0
    out = capsys.readouterr().out
    assert "2 instructions on fsim" in out
    assert [line.split()[-1] for line in out.splitlines() if "gemm_uops" in line] == ["4"]
    assert main(["sim", str(path), "--timeline", str(tmp_path / "t.png")]) == 2
    assert "timeline needs backend rtl" in capsys.readouterr().err
