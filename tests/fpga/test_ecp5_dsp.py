"""ECP5 product registers inside the MULT18X18D: the exec pipe instantiates them for the
ECP5 boards that ask for them only, and under the cell model (tests/fpga/models) they equal
the generic register."""
import json
from pathlib import Path

import pytest
from amaranth.back import rtlil
from amaranth.hdl import Module, Signal, signed
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from vtalab.hw.ecp5_dsp import registered_product
from vtalab.hw.exec_pipe import ExecPipe
from vtalab.spec import preset

MODELS = Path(__file__).resolve().parent / "models"
MODEL = MODELS / "MULT18X18D.v"
FF_MODEL = MODELS / "TRELLIS_FF.v"
CARRY_MODEL = MODELS / "CCU2C.v"


class Ecp5:
    """An open-flow ECP5 board's platform, as fpga/build.py platform_for makes it."""
    family = "ecp5"
    vtalab_dsp_product_registers = True
    vtalab_lane_groups = True


class Ecp5LutProducts(Ecp5):
    """An ECP5 board short of DSPs: the tiny core's last 4 of 64 GEMM products from rows
    of carry cells (hw/carry_rows.py), as fpga/build.py platform_for sets it. Only 4:
    Verilator takes ~25 s per product's 30 CCU2C to compile; every row is proved exact for
    all operands in tests/fpga/test_carry_rows.py."""
    vtalab_gemm_dsp_products = 60


class Ecp5FabricRegisters:
    family = "ecp5"
    vtalab_dsp_product_registers = False


class ProductPair(wiring.Component):
    """The same products twice: in a MULT18X18D (as an ECP5 build makes them) and generic;
    int8 x int8 as the GEMM's, and unsigned 16 x 16 bits as the ALU MUL's partials; each
    also with registered operands (``en_in``, the DSP's input registers): the ``*2``s."""
    a: In(signed(8))
    b: In(signed(8))
    ua: In(16)
    ub: In(16)
    en: In(1)
    en_in: In(1)
    dsp: Out(signed(16))
    ref: Out(signed(16))
    udsp: Out(32)
    uref: Out(32)
    dsp2: Out(signed(16))
    ref2: Out(signed(16))
    udsp2: Out(32)
    uref2: Out(32)

    def elaborate(self, platform):
        m = Module()
        m.d.comb += [
            self.dsp.eq(registered_product(m, Ecp5(), self.a, self.b, self.en, "dsp_p")),
            self.ref.eq(registered_product(m, None, self.a, self.b, self.en, "ref_p")),
            self.udsp.eq(registered_product(m, Ecp5(), self.ua, self.ub, self.en, "dsp_u")),
            self.uref.eq(registered_product(m, None, self.ua, self.ub, self.en, "ref_u")),
        ]
        for out, platform, a, b, name in ((self.dsp2, Ecp5(), self.a, self.b, "dsp2_p"),
                                          (self.ref2, None, self.a, self.b, "ref2_p"),
                                          (self.udsp2, Ecp5(), self.ua, self.ub, "dsp2_u"),
                                          (self.uref2, None, self.ua, self.ub, "ref2_u")):
            m.d.comb += out.eq(registered_product(m, platform, a, b, self.en, name,
                                                  operand_enable=self.en_in))
        return m


def test_mixed_signedness_is_refused():
    with pytest.raises(TypeError, match="must both be signed or both unsigned"):
        registered_product(Module(), Ecp5(), Signal(signed(8)), Signal(8), 1, "p")


def _cells(text: str, kind: str) -> list[str]:
    return [c for c in text.split("\n  cell ")[1:] if c.startswith(f"\\{kind} ")]


def test_exec_pipe_puts_every_product_register_in_a_dsp_only_for_ecp5():
    cfg = preset("orangecrab-25f").replace(alu_mul_bits=0)     # VTA's 32-bit MUL
    cells = _cells(rtlil.convert(ExecPipe(cfg), platform=Ecp5()), "MULT18X18D")
    gemm = [c for c in cells if c.split()[1].startswith("\\prod7_")]
    alu = [c for c in cells if c.split()[1].startswith("\\alu7_mul_")]
    assert len(gemm) == cfg.batch * cfg.block_in * cfg.block_out
    assert len(alu) == 3 * cfg.batch * cfg.block_out           # MUL: 3 partials per lane
    assert len(gemm) + len(alu) == len(cells)
    beats = cfg.replace(alu_mul_lanes=1)        # one multiplier taking the row in 4 beats
    fewer = _cells(rtlil.convert(ExecPipe(beats), platform=Ecp5()), "MULT18X18D")
    assert len(fewer) == len(cells) - len(alu) + 3
    for cell in cells:
        assert 'parameter \\REG_OUTPUT_CLK "CLK0"' in cell
        assert 'parameter \\REG_INPUTA_CLK "CLK0"' in cell and 'parameter \\GSR "DISABLED"' in cell
        assert 'parameter \\REG_INPUTB_CLK "CLK0"' in cell
        assert 'parameter \\REG_INPUTA_CE "CE1"' in cell
        assert "connect \\RST0 1'0" in cell
    for cell in gemm:           # int8 operands in the top bits: A0..A9 tied to 0, no copies
        assert "connect \\SIGNEDA 1'1" in cell and "connect \\SIGNEDB 1'1" in cell
        assert all(f"connect \\{p}{k} 1'0\n" in cell for p in "AB" for k in range(10))
        assert not any(f"connect \\{p}{k} 1'0\n" in cell for p in "AB" for k in range(10, 18))
        outputs = {cell.split(f"connect \\P{k} ")[1].split("\n")[0] for k in range(20, 36)}
        assert len(outputs) == 16                   # the product is P20..P35
    for cell in alu:            # 16-bit halves of the int32 operands, zero-extended
        assert "connect \\SIGNEDA 1'0" in cell and "connect \\SIGNEDB 1'0" in cell
        assert all(f"connect \\{p}{k} 1'0\n" in cell for p in "AB" for k in (16, 17))
    assert not _cells(rtlil.convert(ExecPipe(cfg)), "MULT18X18D")
    assert not _cells(rtlil.convert(ExecPipe(cfg), platform=Ecp5FabricRegisters()), "MULT18X18D")


def test_the_build_platform_carries_the_boards_dsp_register_choice():
    import dataclasses
    from vtalab.fpga import get_board
    from vtalab.fpga.build import platform_for
    for name in ("orangecrab-25f", "ulx3s-85f"):
        board = get_board(name)
        assert board.dsp_product_registers
        assert platform_for(board).vtalab_dsp_product_registers
        off = dataclasses.replace(board, dsp_product_registers=False)
        assert not platform_for(off).vtalab_dsp_product_registers


@pytest.mark.slow
def test_dsp_product_equals_generic_register_under_the_cell_model():
    from tests.hw.rtl import run
    run("ecp5-dsp-product", ProductPair(), "tb_ecp5_dsp", sources=[MODEL])


@pytest.mark.slow
@pytest.mark.parametrize("mul_lanes", [0, 2])
def test_ecp5_core_matches_functional_simulator_under_the_cell_model(mul_lanes):
    """The core as ECP5 boards build it (GEMM products and every ALU MUL partial in a DSP
    output register, the last GEMM products from CCU2C rows as on a board short of DSPs,
    the STORE's entry count from a DSP, the accumulator's per-lane control
    copies as TRELLIS_FF instances), under the cells' models, runs the tb_core programs
    exactly as the functional simulator does; also with the ALU MUL's 18-bit products
    in two DSPs taking the row in four beats (hw/alu_beats.py)."""
    from tests.hw.rtl import run
    from vtalab.hw.core import Core
    extra = {"alu_mul_bits": 18, "alu_mul_lanes": mul_lanes} if mul_lanes else {}
    cfg = preset("tiny").replace(**extra)
    assert cfg.macs_per_cycle - Ecp5LutProducts.vtalab_gemm_dsp_products == 4
    env = {"VTALAB_BUS_BITS": "64", "VTALAB_CONFIG_EXTRA": json.dumps(extra)}
    run(f"core-tiny-ecp5-mul{mul_lanes}", Core(cfg), "tb_core", env=env,
        platform=Ecp5LutProducts(), sources=[MODEL, FF_MODEL, CARRY_MODEL])

