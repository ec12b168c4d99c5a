"""hw/registers.py replicated_register: in the open FPGA flow the per-lane copies of the
accumulator's and the ALU's control flip-flops, the DMA assembler's per-beat copies, the
GEMM operands' copies per DSP and the stall comparators' own dst chain are TRELLIS_FF
instances on ECP5 (Yosys would merge equal registers), plain registers on
the synthesis netlist the RTL tests run, and one register elsewhere. That the copies
behave as the register they replace is what the RTL tests on the synthesis netlist and
the ECP5 core under the cell models (tests/fpga/test_ecp5_dsp.py) show."""
from amaranth.back import rtlil
from amaranth.hdl import Module, Signal

from vtalab.hw.control import READ_GROUP
from vtalab.hw.core import Core
from vtalab.hw.dma_assembler import region_beats
from vtalab.hw.forward import FORWARD_DEPTH, acc_lane_groups
from vtalab.hw.registers import replicated_register
from vtalab.hw.sram import wgt_lane_groups
from vtalab.hw.verilog import OpenFlowPlatform, SimulatorPlatform
from vtalab.spec import preset
from vtalab.spec.regs import REG_BYTES, REGISTERS
from vtalab.spec.timing import BEAT_STAGE_BEATS, WRITE_STAGE

from .test_ecp5_dsp import Ecp5, _cells


def flops_per_lane(cfg) -> int:
    """The older results' matches and one-hot selects, "none", the overwrite, the newest
    result's select; the accumulate stage's ALU / reset choice; the accumulator write's select,
    the pipe's write address, the acc LOAD's write enable, address and pad flag, the two
    read addresses;
    the ALU's use_imm, its immediate shift (flag, direction, distance), v_sum, w_sum,
    is_max, the four stage-6 selects, stage 8's SAT and relu flags, and is-MUL."""
    forward = 2 * (FORWARD_DEPTH - 1) + 3
    alu = 1 + 2 + cfg.shift_bits + 3 + 5 + 2
    acc_load = 1 + cfg.addr_bits("acc") + 1
    acc_ports = 1 + cfg.addr_bits("acc") + acc_load + 2 * cfg.addr_bits("acc")
    return forward + 2 + acc_ports + alu


def _assembler_copies(cfg, platform) -> dict:
    """Flip-flops of the DMA assemblers' copies (hw/dma_assembler.py): ``have`` per bus beat
    of each two-beat entry; per region of a longer entry (wgt 8 and acc 4 beats here; a
    region per SRAM slice where the slices split the entry at beats) the staged beat's
    valid (reset), slot and data (not reset)."""
    copies = {"have": 0, "beat_q": 0, "beat_slot": 0, "beat_data": 0}
    slices = {"inp": 1, "wgt": wgt_lane_groups(cfg, platform),
              "acc": acc_lane_groups(cfg, platform)}
    for buffer in ("inp", "wgt", "acc"):
        beats = cfg.entry_bytes(buffer) // cfg.bus_bytes
        if beats == 2:
            copies["have"] += beats
        elif beats >= BEAT_STAGE_BEATS:
            regions = -(-beats // region_beats(beats, slices[buffer]))
            copies["beat_q"] += regions
            copies["beat_slot"] += regions * beats
            copies["beat_data"] += regions * cfg.bus_bits
    return copies


def _operand_copy_bits(cfg) -> int:
    """Stage 4 (hw/gemm_tree.py): an inp element per output column, a wgt element per batch
    row: one copy per DSP of each operand."""
    dsps = cfg.batch * cfg.block_out * cfg.block_in
    return dsps * (cfg.elem_bits("inp") + cfg.elem_bits("wgt"))


def _read_groups() -> int:
    """hw/control.py: one copy of the read address per group of READ_GROUP words."""
    return len({(reg.offset + word * REG_BYTES) // (READ_GROUP * REG_BYTES)
                for reg in REGISTERS for word in range(reg.words)})


def test_the_ecp5_core_has_a_copy_of_each_control_flop_per_accumulator_lane():
    cfg = preset("tiny")
    cells = _cells(rtlil.convert(Core(cfg), platform=Ecp5()), "TRELLIS_FF")
    want = _assembler_copies(cfg, Ecp5())
    assembler = {name: [c for c in cells if c.startswith(f"\\TRELLIS_FF \\{name}_")]
                 for name in want}
    assert {name: len(found) for name, found in assembler.items()} == want
    assert want["beat_data"] > 0
    for cell in assembler["beat_slot"] + assembler["beat_data"]:     # data: not reset
        assert "connect \\LSR 1'0" in cell
    cells = [c for c in cells if c not in assembler["beat_slot"] + assembler["beat_data"]]
    assembler = assembler["have"] + assembler["beat_q"]
    operands = [c for c in cells if c.startswith(("\\TRELLIS_FF \\inp5_",
                                                  "\\TRELLIS_FF \\wgt5_"))]
    assert len(operands) == _operand_copy_bits(cfg)
    for cell in operands:                      # data: not reset
        assert "connect \\LSR 1'0" in cell and 'parameter \\CEMUX "1"' in cell
    hazard = [c for c in cells if c.startswith("\\TRELLIS_FF \\hazard_row")]
    assert len(hazard) == (1 + cfg.addr_bits("acc")) * len(range(3, WRITE_STAGE - 1))
    read_selects = [c for c in cells if c.startswith("\\TRELLIS_FF \\raddr_in_group_")]
    assert len(read_selects) == _read_groups() * (READ_GROUP * REG_BYTES - 1).bit_length()
    assert all('parameter \\CEMUX "CE"' in cell for cell in read_selects)
    cells = [c for c in cells if c not in operands + hazard + read_selects]
    assert len(cells) - len(assembler) == flops_per_lane(cfg) * cfg.batch * cfg.block_out
    enabled = [c for c in cells if c.startswith(("\\TRELLIS_FF \\dst_idx2_",
                                                 "\\TRELLIS_FF \\src_idx2_"))]
    assert len(enabled) == 2 * cfg.addr_bits("acc") * cfg.batch * cfg.block_out
    # the acc DMA's pad flag per slice, loaded when the writer steps
    fills = [c for c in cells if c.startswith("\\TRELLIS_FF \\fill_")]
    assert len(fills) == cfg.batch * cfg.block_out
    enabled += fills
    for cell in cells:
        cemux = '"CE"' if cell in enabled else '"1"'
        assert f'parameter \\CEMUX {cemux}' in cell and 'parameter \\SRMODE "LSR_OVER_CE"' in cell
        assert "connect \\LSR \\rst" in cell and "connect \\CLK \\clk" in cell
    assert not _cells(rtlil.convert(Core(cfg)), "TRELLIS_FF")


def test_copies_are_registers_of_their_own_only_where_the_platform_asks():
    value = Signal()
    m = Module()
    copies = replicated_register(m, OpenFlowPlatform(), value, 3, "flag")
    assert len({id(c) for c in copies}) == 3
    for platform in (None, SimulatorPlatform()):
        shared = replicated_register(m, platform, value, 3, "shared")
        assert len(shared) == 3 and len({id(c) for c in shared}) == 1
