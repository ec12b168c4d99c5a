"""System test: the whole Core under cocotb runs programs bit-identically to the
functional simulator (with and without AXI back-pressure); Verilog lints for presets."""
import os
import subprocess

import pytest

from vtalab.spec import Config, preset

from .rtl import run, toolchain


@pytest.mark.slow
@pytest.mark.parametrize("bus_bits", [64, 256])
def test_core_programs_match_functional_simulator(bus_bits):
    from vtalab.hw.core import Core
    cfg = Config.from_dict(dict(preset("tiny").hardware_dict(), bus_bits=bus_bits))
    run(f"core-tiny-{bus_bits}", Core(cfg), "tb_core", env={"VTALAB_BUS_BITS": str(bus_bits)})


class PoisonedReadCollisions:
    """A platform whose SRAMs invert a read of the row written in the same cycle."""
    vtalab_sram_collisions = "poison"


@pytest.mark.slow
def test_core_never_uses_a_read_of_a_row_written_in_the_same_cycle():
    """What lets FPGA builds drop Yosys' bypass logic (hw/sram.py): with every such read
    corrupted, the programs (accumulation chains that the exec pipe forwards over
    included) still match the functional simulator."""
    from vtalab.hw.core import Core
    run("core-tiny-poisoned", Core(preset("tiny")), "tb_core",
        env={"VTALAB_BUS_BITS": "64"}, platform=PoisonedReadCollisions())


@pytest.mark.parametrize("name", ["tiny", "default"])
def test_verilog_lints_clean(name, tmp_path):
    env = dict(os.environ, **toolchain())
    from vtalab.hw.verilog import generate
    source = tmp_path / f"{name}.v"
    source.write_text(generate(preset(name)))
    result = subprocess.run(["verilator", "--lint-only", "-Wno-fatal", str(source)],
                            env=env, capture_output=True, text=True)
    errors = [line for line in result.stderr.splitlines() if line.startswith("%Error")]
    assert result.returncode == 0 and not errors, "\n".join(errors[:20])


@pytest.mark.slow
def test_core_matches_vta_conformance_vectors(conformance_root):
    """The default preset on VTA's own vectors (a long build: opt in)."""
    if os.environ.get("VTALAB_RTL_CONFORMANCE") != "1":
        pytest.skip("set VTALAB_RTL_CONFORMANCE=1 to build the default-preset Core (minutes)")
    from vtalab.hw.core import Core
    run("core-default", Core(preset("default")), "tb_conformance",
        env={"VTALAB_CONFORMANCE_ROOT": str(conformance_root),
             "VTALAB_CYCLE_LIMIT": "2000000"})
