"""Resource estimates from a Config alone, so a build that cannot fit fails before any tool runs.

Block RAMs: every SRAM buffer of the core (the accumulator twice: it has two read ports),
plus the on-chip DRAM of boards without a DDR port, packed into the part's block-RAM aspect
ratios the way Yosys' memory mapper does (best aspect ratio, width x depth tiling).
DSPs: one multiplier per GEMM lane (batch x block_in x block_out int8 x int8 products) plus
the ALU's wrapping mul_bits x mul_bits multiply in each of its Config.mul_lanes multipliers
(one per accumulator element by default), each split into
the part's native multiplier width, plus the store module's y_size x x_size (16 x 16 bits),
packed into the part's DSP units (one per product on ECP5 and Zynq; a Cyclone V
variable-precision block holds three 9x9 or two 18x19 multipliers).
Checked against Yosys: 1x8x16 maps to 177 MULT18X18D, as estimated. An open-flow board
with ``hard_dsp=False`` gives the GEMM the DSPs the ALU and the store leave and builds its
other products from LUTs (``lut_products``; hw/lut_multiplier.py); ``Board.gemm_dsps``
caps the GEMM's DSPs further (0: every product from carry rows).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from vtalab.hw.alu import mul_products
from vtalab.hw.forward import acc_lane_groups
from vtalab.hw.sram import wgt_lane_groups
from vtalab.hw.verilog import OpenFlowPlatform
from vtalab.spec import Config

from .boards import Board, get_board
from .errors import ResourceError

# (depth, width) aspect ratios of one block RAM primitive.
BRAM_SHAPES = {
    "ecp5": ((16384, 1), (8192, 2), (4096, 4), (2048, 9), (1024, 18), (512, 36)),     # DP16KD
    "vivado": ((16384, 1), (8192, 2), (4096, 4), (2048, 9), (1024, 18), (512, 36)),   # RAMB18
    "quartus": ((8192, 1), (4096, 2), (2048, 5), (1024, 10), (512, 20), (256, 40)),   # M10K
}
# Native signed multiplier width of one DSP unit counted in Board.capacity["dsp"].
DSP_WIDTH = {"ecp5": 18, "vivado": 18, "quartus": 18}
# (widest operand, products per DSP unit) of each multiplier mode, narrowest first.
DSP_MODES = {"ecp5": ((18, 1),), "vivado": ((18, 1),), "quartus": ((9, 3), (18, 2))}
LUTRAM_BITS = 4096            # smaller memories go to distributed RAM
READ_PORTS = {"uop": 1, "inp": 1, "wgt": 1, "acc": 2, "out": 1}
OTHER_MULTIPLIERS = ((16, 16, 32),)     # store: rows to write = y_size * x_size
# LUT4s of one int8 x int8 GEMM product from LUTs (hw/lut_multiplier.py) with its operand
# and product registers: on ECP5 rows of carry cells (hw/carry_rows.py), which Yosys 0.70
# synth_ecp5 keeps as 36 CCU2C (two LUT4 each) and no LUT4 (the gated sums as Mux and +
# were 163 LUT4, 18 CCU2C and wide-function muxes). Its rows grow with a_bits x b_bits.
LUT_PRODUCT_LUT4_INT8 = 72


@dataclass(frozen=True)
class Estimate:
    """Estimated use of the scarce resources; ``detail`` says where they go."""
    dsp: int
    bram: int
    detail: dict

    def rows(self, board: Board) -> list[tuple[str, int, int]]:
        return [("dsp", self.dsp, board.capacity["dsp"]),
                ("bram", self.bram, board.capacity["bram"])]


def bram_blocks(width: int, depth: int, flow: str = "ecp5") -> int:
    """Block RAMs for one ``width`` x ``depth`` memory with one write and one read port."""
    if width * depth < LUTRAM_BITS:
        return 0
    return min(math.ceil(width / w) * math.ceil(depth / d) for d, w in BRAM_SHAPES[flow])


def multiplier_dsps(a_bits: int, b_bits: int, out_bits: int, flow: str = "ecp5") -> int:
    """DSP units for an ``a_bits`` x ``b_bits`` signed product truncated to ``out_bits``."""
    native = DSP_WIDTH[flow]
    a_parts = _split(a_bits, native)
    b_parts = _split(b_bits, native)
    count = 0
    for a_shift in a_parts:
        for b_shift in b_parts:
            if a_shift + b_shift < out_bits:   # partial products above the kept bits vanish
                count += 1
    return count


def dsp_units(a_bits: int, b_bits: int, out_bits: int, count: int,
              flow: str = "ecp5") -> int:
    """DSP units for ``count`` independent ``a_bits`` x ``b_bits`` products: in the
    narrowest mode that takes both operands, else as native-width partial products."""
    widest = max(a_bits, b_bits)
    if widest <= DSP_WIDTH[flow]:
        return _packed(count, widest, flow)
    return _packed(count * multiplier_dsps(a_bits, b_bits, out_bits, flow), DSP_WIDTH[flow],
                   flow)


def _packed(products: int, bits: int, flow: str) -> int:
    """DSP units for ``products`` multipliers of at most ``bits`` x ``bits``."""
    per_unit = next(n for width, n in DSP_MODES[flow] if bits <= width)
    return math.ceil(products / per_unit)


def _split(bits: int, native: int) -> list[int]:
    """Shifts of the chunks a signed operand is cut into (unsigned low chunks of native-1)."""
    if bits <= native:
        return [0]
    return [0] + [s + native - 1 for s in _split(bits - (native - 1), native)]


def memories(cfg: Config, dram_bytes: int = 0, lane_groups: bool = False) -> dict:
    """name -> (width bits, depth, copies) of every block-RAM candidate; ``lane_groups``:
    the accumulator sliced per element and wide wgt entries per output lane, as the open
    flow builds them (hw/forward.py, hw/sram.py)."""
    mems = {buf: (cfg.entry_bytes(buf) * 8, cfg.depth(buf), READ_PORTS[buf])
            for buf in READ_PORTS}
    platform = OpenFlowPlatform() if lane_groups else None
    for buf, slices in (("acc", acc_lane_groups(cfg, platform)),
                        ("wgt", wgt_lane_groups(cfg, platform))):
        mems[buf] = (cfg.entry_bytes(buf) * 8 // slices, cfg.depth(buf),
                     READ_PORTS[buf] * slices)
    if dram_bytes:
        mems["dram"] = (cfg.bus_bits, dram_bytes // cfg.bus_bytes, 1)
    return mems


def alu_mul_dsps(cfg: Config, flow: str) -> int:
    """DSP units per ALU multiplier (one per lane, or ``Config.alu_mul_lanes``): the
    pipelined MUL's products (hw/alu.py), each one DSP where a DSP takes its operands
    (ECP5's 18 bits), else the product's own split."""
    if flow == "ecp5":
        return mul_products(cfg)
    return multiplier_dsps(cfg.mul_bits, cfg.mul_bits, cfg.acc_bits, flow)


def alu_units(cfg: Config, flow: str) -> int:
    """DSP units of the ALU's MUL: its ``Config.mul_lanes`` multipliers."""
    products = cfg.mul_lanes * alu_mul_dsps(cfg, flow)
    return _packed(products, min(cfg.mul_bits, DSP_WIDTH[flow]), flow)


def estimate(cfg: Config, board: "Board | str") -> Estimate:
    board = get_board(board)
    flow = board.flow
    detail = {}
    bram = 0
    for name, (width, depth, copies) in memories(cfg, board.dram_bytes, board.open_flow).items():
        blocks = copies * bram_blocks(width, depth, flow)
        detail[f"bram_{name}"] = blocks
        bram += blocks
    gemm = dsp_units(cfg.inp_bits, cfg.wgt_bits, cfg.inp_bits + cfg.wgt_bits,
                     cfg.macs_per_cycle, flow)
    alu = alu_units(cfg, flow)
    other = sum(dsp_units(a, b, out, 1, flow) for a, b, out in OTHER_MULTIPLIERS)
    lut_products = 0
    if board.open_flow and (not board.hard_dsp or board.gemm_dsps is not None):
        left = max(0, board.capacity["dsp"] - alu - other)   # the GEMM takes the DSPs left
        if board.gemm_dsps is not None:
            left = min(left, board.gemm_dsps)
        lut_products = max(0, gemm - left)                  # ... then carry rows
        gemm -= lut_products
    detail.update(dsp_gemm=gemm, dsp_alu=alu, dsp_other=other, lut_products=lut_products)
    return Estimate(dsp=gemm + alu + other, bram=bram, detail=detail)


def lut_product_lut4(cfg: Config) -> int:
    """LUT4s of one GEMM product from LUTs, scaled from the int8 x int8 measurement."""
    return math.ceil(LUT_PRODUCT_LUT4_INT8 * cfg.inp_bits * cfg.wgt_bits / 64)


def gemm_dsp_budget(cfg: Config, board: "Board | str") -> int | None:
    """The GEMM products an open-flow build multiplies in DSPs when the rest must come from
    LUTs (hw/lut_multiplier.py), else None (all in DSPs, or the vendor tool's choice)."""
    est = estimate(cfg, board)
    return est.detail["dsp_gemm"] if est.detail["lut_products"] else None


def check_fits(cfg: Config, board: "Board | str") -> Estimate:
    """Raise ResourceError naming the resource and the numbers when ``cfg`` cannot fit."""
    board = get_board(board)
    est = estimate(cfg, board)
    problems = []
    if est.bram > board.capacity["bram"]:
        parts = ", ".join(f"{k[5:]} {v}" for k, v in est.detail.items()
                          if k.startswith("bram_") and v)
        problems.append(f"block RAMs must be at most {board.capacity['bram']}, not {est.bram} "
                        f"({parts}): reduce the buffer depths")
    if board.hard_dsp and est.dsp > board.capacity["dsp"]:
        problems.append(f"multipliers (DSPs) must be at most {board.capacity['dsp']}, not "
                        f"{est.dsp} (GEMM {cfg.batch}x{cfg.block_in}x{cfg.block_out} = "
                        f"{est.detail['dsp_gemm']}, ALU {est.detail['dsp_alu']}, other "
                        f"{est.detail['dsp_other']}): use a "
                        f"smaller block shape")
    per_product = lut_product_lut4(cfg)
    luts = est.detail["lut_products"] * per_product
    if luts > board.capacity["lut"]:
        problems.append(f"GEMM products from LUTs must take at most the part's "
                        f"{board.capacity['lut']} LUT4, not about {luts} "
                        f"({est.detail['lut_products']} x {per_product}): use a "
                        f"smaller block shape")
    if problems:
        raise ResourceError(f"config {cfg.name} does not fit {board.name} ({board.part}): "
                            + "; ".join(problems))
    return est
