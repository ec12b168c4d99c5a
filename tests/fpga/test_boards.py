"""Board presets, the resource estimate and the early "does not fit" check."""
from dataclasses import replace

import pytest

from vtalab.fpga import BOARDS, FpgaError, ResourceError, board_names, get_board
from vtalab.fpga.build import platform_for
from vtalab.fpga.pll import pll_params
from vtalab.fpga.resources import (bram_blocks, check_fits, dsp_units, estimate,
                                   gemm_dsp_budget, multiplier_dsps)
from vtalab.spec import Config, load_config


def test_every_board_registers_its_preset():
    assert {"ulx3s-85f", "orangecrab-25f", "pynq-z1", "de10-nano"} <= set(board_names())
    for name, board in BOARDS.items():
        cfg = load_config(name)
        assert cfg.name == name and cfg == board.cfg()


def test_board_presets_fit_their_parts():
    for board in BOARDS.values():
        est = check_fits(board.cfg(), board)
        assert est.bram <= board.capacity["bram"]
        if board.hard_dsp:
            assert est.dsp <= board.capacity["dsp"]


def test_ulx3s_preset_builds_its_128_products_from_carry_rows():
    board = get_board("ulx3s-85f")
    cfg = board.cfg()
    assert (cfg.batch, cfg.block_in, cfg.block_out) == (1, 16, 8)
    assert cfg.macs_per_cycle == 128 and cfg.clock_mhz == 100.0
    assert cfg.mul_bits == 18 and cfg.alu_units == 2    # two lanes, one MULT18X18D each
    est = check_fits(cfg, board)
    assert (est.detail["dsp_gemm"], est.detail["lut_products"], est.dsp) == (0, 128, 2 + 1)
    assert platform_for(board, cfg).vtalab_gemm_dsp_products == 0
    on_dsps = replace(board, gemm_dsps=None)
    assert estimate(cfg, on_dsps).dsp == 128 + 2 + 1
    # an ALU lane per element with VTA's 32-bit MUL: 3 DSPs per lane
    per_element = cfg.replace(alu_lanes=0, alu_mul_bits=0)
    assert estimate(per_element, on_dsps).dsp == 128 + 8 * 3 + 1
    # 128 MACs transposed: 16 ALU lanes x 3 DSPs (+1) more than 156
    wide_out = per_element.replace(block_in=8, block_out=16)
    with pytest.raises(ResourceError, match=r"does not fit ulx3s-85f \(LFE5U-85F-6BG381C\): "
                                            r"multipliers \(DSPs\) must be at most 156, not 177"):
        check_fits(wide_out, on_dsps)
    # the same shape with one 32-bit MUL taking the 16 lanes in beats: 3 DSPs, not 48
    assert estimate(wide_out.replace(alu_mul_lanes=1), on_dsps).dsp == 128 + 3 + 1
    check_fits(wide_out.replace(alu_mul_lanes=1), on_dsps)


def test_default_config_fails_early_naming_resource_and_numbers():
    # 334 block RAMs: the 2048-bit wgt entries sliced per output lane in the open flow
    # (16 x 8 instead of 114, hw/sram.py wgt_lane_groups)
    with pytest.raises(ResourceError, match=r"block RAMs must be at most 208, not 334 .*; "
                                            r"multipliers \(DSPs\) must be at most 156, "
                                            r"not 305 \(GEMM 1x16x16 = 256, ALU 48, other 1\)"):
        check_fits(Config(), replace(get_board("ulx3s-85f"), gemm_dsps=None))
    # the board's own products all from carry rows: only the block RAMs are short
    with pytest.raises(ResourceError, match=r"block RAMs must be at most 208, not 334 "
                                            r"\([^)]*\): reduce the buffer depths$"):
        check_fits(Config(), "ulx3s-85f")
    big = get_board("orangecrab-25f").cfg().replace(wgt_depth=8192)
    with pytest.raises(ResourceError, match=r"block RAMs must be at most 56, not \d+ "
                                            r"\(.*wgt \d+"):
        check_fits(big, "orangecrab-25f")


def test_open_flow_lut_multipliers_give_the_gemm_the_dsps_left():
    on_dsps = replace(get_board("ulx3s-85f"), gemm_dsps=None)
    board = replace(on_dsps, hard_dsp=False)
    cfg = board.cfg().replace(block_out=16, alu_lanes=0)   # 256 GEMM + 16 ALU + 1 > 156
    est = check_fits(cfg, board)
    assert est.dsp == 156 and est.detail["dsp_gemm"] == 139
    assert est.detail["lut_products"] == 117
    assert gemm_dsp_budget(cfg, board) == 139
    assert platform_for(board, cfg).vtalab_gemm_dsp_products == 139
    assert gemm_dsp_budget(board.cfg(), board) is None          # the preset fits
    assert platform_for(board, board.cfg()).vtalab_gemm_dsp_products is None
    with pytest.raises(ResourceError, match=r"multipliers \(DSPs\) must be at most 156, "
                                            r"not 273 \(GEMM 1x16x16 = 256, ALU 16"):
        check_fits(cfg, on_dsps)                    # hard_dsp: the board's default
    huge = cfg.replace(block_in=64, block_out=32)   # 2048 products: 1925 from LUTs
    with pytest.raises(ResourceError, match=r"GEMM products from LUTs must take at most "
                                            r"the part's 83640 LUT4, not about 138600 "
                                            r"\(1925 x 72\)"):
        check_fits(huge, board)


def test_gemm_dsps_caps_the_gemm_products_in_dsps():
    cfg = get_board("ulx3s-85f").cfg().replace(alu_lanes=0)     # 128 GEMM products
    board = get_board("ulx3s-85f")                                # gemm_dsps=0, hard_dsp
    est = check_fits(cfg, board)
    assert (est.detail["dsp_gemm"], est.detail["lut_products"], est.dsp) == (0, 128, 9)
    assert platform_for(board, cfg).vtalab_gemm_dsp_products == 0
    some = check_fits(cfg, replace(board, gemm_dsps=100))
    assert (some.detail["dsp_gemm"], some.detail["lut_products"]) == (100, 28)
    # a cap above what the ALU and the store leave: the DSPs left decide
    wide = replace(board, gemm_dsps=1000, hard_dsp=False)
    assert check_fits(cfg.replace(block_out=16), wide).detail["dsp_gemm"] == 139
    with pytest.raises(FpgaError, match=r"gemm_dsps of board 'ulx3s-85f' must be None or, "
                                        r"on an open-flow board, an integer >= 0, not -1"):
        replace(board, gemm_dsps=-1)
    with pytest.raises(FpgaError, match=r"gemm_dsps of board 'pynq-z1' .* not 0"):
        replace(get_board("pynq-z1"), gemm_dsps=0)      # Vivado picks its own multipliers


def test_vendor_boards_spill_multipliers_to_luts():
    est = check_fits(Config(), "pynq-z1")       # 305 > 220 DSP48E1: Vivado uses LUTs
    assert est.dsp > get_board("pynq-z1").capacity["dsp"]


def test_block_ram_and_dsp_arithmetic():
    assert bram_blocks(512, 1024) == 29          # 1024 x 18 aspect: ceil(512 / 18)
    assert bram_blocks(1024, 512) == 29          # 512 x 36
    assert bram_blocks(64, 8192) == 32           # 64 KiB
    assert bram_blocks(32, 64) == 0              # distributed RAM
    assert multiplier_dsps(8, 8, 16) == 1
    assert multiplier_dsps(32, 32, 32) == 3      # the high x high part is above bit 32
    assert multiplier_dsps(32, 32, 64) == 4
    # the open flow slices the accumulator per element (hw/forward.py): 16 x 32 bits
    assert estimate(Config(), "ulx3s-85f").detail["bram_acc"] == 2 * 16 * bram_blocks(32, 2048)
    assert estimate(Config(), "pynq-z1").detail["bram_acc"] == 2 * bram_blocks(512, 2048)


def test_unknown_board():
    with pytest.raises(FpgaError, match=r"board must be one of \[.*'ulx3s-85f'.*\], not 'nope'"):
        get_board("nope")
    assert get_board("ULX3S_85F").name == "ulx3s-85f"


@pytest.mark.parametrize("fin, fout", [(25, 100), (25, 75), (48, 75), (25, 125), (48, 50)])
def test_pll_dividers_come_close_to_the_clock(fin, fout):
    p = pll_params(fin, fout)
    assert abs(p.out_mhz - fout) / fout < 0.03       # 48 -> 50 MHz: 51.2 is the closest
    assert 400 <= p.vco_mhz <= 800
    assert p.out_mhz == pytest.approx(fin / p.clki_div * p.clkfb_div)


def test_the_reset_reaches_a_clock_network_through_a_dcca_unless_the_board_says_not():
    from amaranth.back import rtlil
    from amaranth.hdl import ClockDomain, Module, Signal
    from vtalab.fpga.pll import Ecp5Pll
    assert get_board("ulx3s-85f").global_reset and not get_board("orangecrab-25f").global_reset
    for global_reset in (True, False):
        m = Module()
        m.domains.sync = ClockDomain("sync", async_reset=True)        # as fpga/top.py
        m.submodules.pll = Ecp5Pll(Signal(name="clk_in"), pll_params(48, 120),
                                   global_reset=global_reset)
        m.d.sync += Signal(name="counter", init=1).eq(0)       # a register the reset resets
        design = rtlil.convert(m, ports=[])
        assert ("cell \\DCCA " in design) == global_reset


def test_pll_refuses_impossible_clock():
    with pytest.raises(FpgaError, match="PLL output must be"):
        pll_params(25, 1000)


def test_de10_nano_has_its_own_preset_sized_for_the_cyclone_v():
    board = get_board("de10-nano")
    cfg = board.cfg()
    assert cfg == load_config("de10-nano") and cfg != get_board("pynq-z1").cfg()
    assert cfg.bus_bits == max(board.soc.dma_widths) == 128
    est = check_fits(cfg, board)
    # 256 int8 products three to a DSP block, 16 ALU lanes x 3 18x18 two to a block, 1 store.
    assert (est.detail["dsp_gemm"], est.detail["dsp_alu"], est.detail["dsp_other"]) == (86, 24, 1)
    assert est.dsp <= board.capacity["dsp"] == 112
    assert est.bram == 491 <= board.capacity["bram"] == 553


def test_cyclone_v_dsp_blocks_pack_small_products():
    assert dsp_units(8, 8, 16, 3, "quartus") == 1          # three 9x9 in one block
    assert dsp_units(8, 8, 16, 4, "quartus") == 2
    assert dsp_units(16, 16, 32, 2, "quartus") == 1        # two 18x19
    assert dsp_units(32, 32, 32, 1, "quartus") == 2        # 3 partial products, 2 per block
    assert dsp_units(8, 8, 16, 4, "ecp5") == 4             # one MULT18X18D each


def test_soc_boards_carry_their_processor_facts():
    from vtalab.fpga.driver import _default_base
    for name in ("pynq-z1", "de10-nano"):
        soc = get_board(name).soc
        base, size = soc.reg_window
        assert base <= soc.reg_base < base + size
        assert _default_base(load_config(name)) == soc.reg_base
    assert get_board("de10-nano").soc.dma_width(64) == 64
    assert get_board("pynq-z1").soc.dma_width(128) == 64       # HP0 stops at 64 bits
    assert all(board.soc is None for board in BOARDS.values() if board.open_flow)
