"""ECP5 product registers inside the MULT18X18D: the exec pipe instantiates them for the
ECP5 boards that ask for them only, and under the cell model (tests/fpga/models) they equal
the generic register."""
from pathlib import Path

import pytest
from amaranth.back import rtlil
from amaranth.hdl import Module, signed
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from vtalab.hw.ecp5_dsp import registered_product
from vtalab.hw.exec_pipe import ExecPipe
from vtalab.spec import preset

MODEL = Path(__file__).resolve().parent / "models" / "MULT18X18D.v"


class Ecp5:
    family = "ecp5"
    vtalab_dsp_product_registers = True


class Ecp5FabricRegisters:
    family = "ecp5"
    vtalab_dsp_product_registers = False


class ProductPair(wiring.Component):
    """The same product twice: in a MULT18X18D (as an ECP5 build makes it) and generic."""
    a: In(signed(8))
    b: In(signed(8))
    en: In(1)
    dsp: Out(signed(16))
    ref: Out(signed(16))

    def elaborate(self, platform):
        m = Module()
        m.d.comb += [
            self.dsp.eq(registered_product(m, Ecp5(), self.a, self.b, self.en, "dsp_p")),
            self.ref.eq(registered_product(m, None, self.a, self.b, self.en, "ref_p")),
        ]
        return m


def _cells(text: str, kind: str) -> list[str]:
    return [c for c in text.split("\n  cell ")[1:] if c.startswith(f"\\{kind} ")]


def test_exec_pipe_puts_every_gemm_product_register_in_a_dsp_only_for_ecp5():
    cfg = preset("orangecrab-25f")
    cells = _cells(rtlil.convert(ExecPipe(cfg), platform=Ecp5()), "MULT18X18D")
    assert len(cells) == cfg.batch * cfg.block_in * cfg.block_out
    for cell in cells:
        assert 'parameter \\REG_OUTPUT_CLK "CLK0"' in cell
        assert 'parameter \\REG_INPUTA_CLK "NONE"' in cell and 'parameter \\GSR "DISABLED"' in cell
        assert "connect \\RST0 1'0" in cell and "connect \\SIGNEDA 1'1" in cell
        # operands sign-extended: A8..A17 are all the element's bit 7
        a7 = cell.split("connect \\A7 ")[1].split("\n")[0]
        assert all(f"connect \\A{k} {a7}\n" in cell for k in range(8, 18))
    assert not _cells(rtlil.convert(ExecPipe(cfg)), "MULT18X18D")
    assert not _cells(rtlil.convert(ExecPipe(cfg), platform=Ecp5FabricRegisters()), "MULT18X18D")


def test_only_boards_that_ask_get_dsp_product_registers():
    from vtalab.fpga.build import platform_for
    from vtalab.fpga import get_board
    assert platform_for(get_board("orangecrab-25f")).vtalab_dsp_product_registers
    assert not platform_for(get_board("ulx3s-85f")).vtalab_dsp_product_registers


@pytest.mark.slow
def test_dsp_product_equals_generic_register_under_the_cell_model():
    from tests.hw.rtl import run
    run("ecp5-dsp-product", ProductPair(), "tb_ecp5_dsp", sources=[MODEL])
