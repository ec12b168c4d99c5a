"""hw/sram.py wgt_lane_groups: in the open FPGA flow a wgt buffer of 1024-bit entries or
wider is one block-RAM slice per output lane, each read and written at copies of the
addresses of its own (the exec pipe's stage-2 index, the wgt DMA's write address and
enable), so no single flip-flop drives the address pins of 28+ block RAMs across the die.
That the sliced buffer holds and returns the same rows is what the RTL tests on the
synthesis netlist show: it slices the wgt buffer at every width
(hw/verilog.synthesis_netlist_platform)."""
from amaranth.back import rtlil

from vtalab.fpga.resources import bram_blocks, estimate, memories
from vtalab.hw.core import Core
from vtalab.hw.sram import WGT_SLICE_BITS, entry_bits, wgt_lane_groups
from vtalab.hw.verilog import OpenFlowPlatform, SimulatorPlatform, synthesis_netlist_platform
from vtalab.spec import preset

from .test_ecp5_dsp import Ecp5, _cells


def wide():
    """tiny with 16 x 8 weights: 1024-bit wgt entries."""
    return preset("tiny").replace(block_in=16, block_out=8)


def test_only_wide_wgt_entries_in_the_open_flow_are_sliced():
    cfg, narrow = wide(), preset("tiny")
    assert entry_bits(cfg, "wgt") == WGT_SLICE_BITS > entry_bits(narrow, "wgt")
    assert wgt_lane_groups(cfg, OpenFlowPlatform()) == cfg.block_out
    assert wgt_lane_groups(cfg, Ecp5()) == cfg.block_out
    for platform in (None, SimulatorPlatform()):
        assert wgt_lane_groups(cfg, platform) == 1
    assert wgt_lane_groups(narrow, OpenFlowPlatform()) == 1
    assert wgt_lane_groups(narrow, synthesis_netlist_platform(narrow)) == narrow.block_out


def test_each_slice_has_its_own_address_flip_flops():
    cfg = wide()
    groups, aw = cfg.block_out, cfg.addr_bits("wgt")
    text = rtlil.convert(Core(cfg), platform=Ecp5())
    cells = _cells(text, "TRELLIS_FF")
    reads = [c for c in cells if c.startswith("\\TRELLIS_FF \\wgt_idx2_")]
    assert len(reads) == groups * aw
    assert all('parameter \\CEMUX "CE"' in c for c in reads)     # held with the pipe
    # the DMA write's enable and address, per wgt slice and per accumulator lane
    writes = [c for c in cells if c.startswith("\\TRELLIS_FF \\write_copy_")]
    acc_lanes = cfg.batch * cfg.block_out
    assert len(writes) == groups * (1 + aw) + acc_lanes * (1 + cfg.addr_bits("acc"))
    plain = rtlil.convert(Core(cfg), platform=SimulatorPlatform())
    assert "wgt_idx2_" not in plain and not _cells(plain, "TRELLIS_FF")


def test_the_estimate_counts_the_sliced_block_rams():
    cfg = preset("tiny").replace(block_in=16, block_out=8, wgt_depth=512)
    sliced = cfg.block_out * bram_blocks(entry_bits(cfg, "wgt") // cfg.block_out, 512)
    assert sliced == 32 > bram_blocks(entry_bits(cfg, "wgt"), 512) == 29
    assert estimate(cfg, "ulx3s-85f").detail["bram_wgt"] == sliced
    assert memories(cfg, lane_groups=True)["wgt"] == (128, 512, cfg.block_out)
    assert memories(cfg)["wgt"] == (1024, 512, 1)          # vendor flows: one memory
