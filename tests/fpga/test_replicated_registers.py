"""hw/registers.py replicated_register: per-lane copies of the accumulator's control flip-flops
are TRELLIS_FF instances on ECP5 (Yosys would merge equal registers), plain registers
elsewhere, one register for cycle simulators. That the copies behave as the register they
replace is what the RTL tests on the synthesis netlist and the ECP5 core under the cell
models (tests/fpga/test_ecp5_dsp.py) show."""
from amaranth.back import rtlil
from amaranth.hdl import Module, Signal

from vtalab.hw.core import Core
from vtalab.hw.forward import FORWARD_DEPTH
from vtalab.hw.registers import replicated_register
from vtalab.hw.verilog import SimulatorPlatform
from vtalab.spec import preset

from .test_ecp5_dsp import Ecp5, _cells



def flops_per_lane(cfg) -> int:
    """The older results' one-hot selects, "none", the overwrite, the newest result's
    select; the accumulate stage's ALU / reset choice; the accumulator write's select;
    the ALU's use_imm, its immediate shift (flag, direction, distance), v_sum, w_sum,
    is_min, the five stage-6 selects, relu and is-MUL."""
    forward = (FORWARD_DEPTH - 1) + 3
    alu = 1 + 2 + cfg.shift_bits + 3 + 5 + 2
    return forward + 2 + 1 + alu


def test_the_ecp5_core_has_a_copy_of_each_control_flop_per_accumulator_lane():
    cfg = preset("tiny")
    cells = _cells(rtlil.convert(Core(cfg), platform=Ecp5()), "TRELLIS_FF")
    assert len(cells) == flops_per_lane(cfg) * cfg.batch * cfg.block_out
    for cell in cells:
        assert 'parameter \\CEMUX "1"' in cell and 'parameter \\SRMODE "LSR_OVER_CE"' in cell
        assert "connect \\LSR \\rst" in cell and "connect \\CLK \\clk" in cell
    assert not _cells(rtlil.convert(Core(cfg)), "TRELLIS_FF")


def test_copies_are_registers_of_their_own_except_for_simulators():
    value = Signal()
    m = Module()
    copies = replicated_register(m, None, value, 3, "flag")
    assert len({id(c) for c in copies}) == 3
    simulated = replicated_register(m, SimulatorPlatform(), value, 3, "flag_sim")
    assert len(simulated) == 3 and len({id(c) for c in simulated}) == 1
