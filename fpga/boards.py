"""Board presets: a part with its resources, a flow, and a Config sized for the part.

Each board's Config is the spec preset of the same name (declared in spec/config.py, so
``load_config("ulx3s-85f")`` works without importing this package),
so ``vtalab demo --config ulx3s-85f`` simulates exactly what ``vtalab build --board
ulx3s-85f`` synthesizes.

Why these shapes:

- **ULX3S-85F** (LFE5U-85F): 156 MULT18X18D, 84k LUT4. The preset is 1x16x8 (128
  MACs/cycle, 25.6 GOPS at 100 MHz) with every GEMM product from a row of carry cells
  (``gemm_dsps=0``, hw/carry_rows.py): the DSPs sit in a few rows across the die and a
  broadcast operand could not reach 128 of them in a cycle (1x16x8 on DSPs placed at 65-95
  MHz by seed), while carry rows are placed beside their operands. The ALU has 2 lanes
  (``alu_lanes``: the 8 accumulator elements in 4 beats) with an 18-bit MUL (one
  MULT18X18D each). Placed and routed for 105 MHz (``timing_margin=0.05``) with router2's
  timing rip-up: 108.5 / 105.5 / 107.0 MHz at seeds 1-3 (session 26; for 100 MHz: 108.5 /
  102.1 / 99.9; before session 25 1x16x2, 32 MACs). Buffers are cut to fit the 208 DP16KD
  next to a 64 KiB on-chip DRAM. All measurements in docs/fpga.md.
- **OrangeCrab-25F** (LFE5U-25F): 28 MULT18X18D, 56 DP16KD. 1x16x4 (64 MACs/cycle) with the
  18-bit ALU MUL needs 64 + 4 + 1 = 69 multipliers: the GEMM takes the 23 MULT18X18Ds the
  ALU and the store leave and builds its last 41 products from rows of carry cells
  (``hard_dsp=False``, hw/lut_multiplier.py, hw/carry_rows.py; 21k of the 24k LUT4).
  Clocked at 120 MHz (120.6 MHz at seed 1), the GEMM product registers inside the
  MULT18X18Ds (hw/ecp5_dsp.py), the reset through the fabric (``global_reset=False``: at
  87% of the LUTs nextpnr failed to route the input of a reset DCCA; docs/fpga.md).
  Session 19: 1x16x2 at 125 MHz (8.0 GOPS); before it 1x8x2 with the 32-bit MUL (4.0).
- **PYNQ-Z1** (xc7z020, VTA's main board): VTA's 1x16x16 array with the buffers that fit
  its 280 RAMB18; multipliers beyond the 220 DSP48E1 go to LUTs.
- **DE10-Nano** (5CSEBA6: 41,910 ALMs, 553 M10K, 112 variable-precision DSP blocks, each
  three 9x9 or two 18x19 multipliers): VTA's 1x16x16 with VTA's own buffer depths. The 256
  int8 products take 86 blocks in 9x9 mode, the ALU's 16 lanes x 3 18x18 partial products
  24, the store's 16x16 one: 111 of 112. The buffers take 491 of the 553 M10K (wgt 205,
  acc 2 x 103, inp 26, out 26, uop 28). The bus is 128 bits, the widest the FPGA-to-HPS
  bridge takes: at 100 MHz 1.6 GB/s, half of what its 64-bit L3 side and the 32-bit DDR3
  at 400 MHz carry; the bridges cross clock domains themselves, so the fabric clock is a
  PLL output of the 50 MHz oscillator.

The processor-system facts of the SoC boards (register address, processor ports, pins, DDR
settings) are ``Board.soc`` (fpga/soc_facts.py).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from vtalab.spec import Config
from vtalab.spec.config import preset

from .errors import FpgaError
from .soc_facts import DE10_NANO, PYNQ_Z1, SocFacts

FLOWS = ("ecp5", "vivado", "quartus")


PLACERS = ("heap", "static", "sa")
MAX_TIMING_MARGIN = 0.5


@dataclass(frozen=True)
class Board:
    """One board: its part, the flow that builds it and the accelerator sized for it."""
    name: str
    title: str
    flow: str                       # one of FLOWS
    part: str                       # vendor part number
    platform: str                   # "module:Class" of the amaranth-boards platform
    capacity: dict                  # resource -> available: lut, ff, dsp, bram
    config: dict                    # Config parameters of the board preset
    dram_bytes: int = 0             # on-chip DRAM (open-flow boards without a DDR port)
    uart_baud: int = 115200
    notes: str = ""
    # multipliers beyond the DSPs are fatal; else they go to LUTs (the vendor tool's
    # choice, or in the open flow the GEMM's last products, hw/lut_multiplier.py)
    hard_dsp: bool = True
    # open flow: at most this many GEMM products in DSPs, the rest from carry rows (0: all;
    # a design without DSP lanes is not pinned to the DSP rows across the die); None: as
    # many as fit (with hard_dsp=False)
    gemm_dsps: "int | None" = None
    dsp_product_registers: bool = False   # product registers inside the DSPs (ECP5)
    soc: "SocFacts | None" = None   # processor-system facts of vendor-flow boards
    placer: str = "heap"            # nextpnr's placer (open flow): one of PLACERS
    timing_ripup: bool = True       # router2 rips up and reroutes failing paths (open flow)
    global_reset: bool = True       # the reset on a primary clock network (fpga/pll.py)
    # open flow: nextpnr places and routes for the clock x (1 + timing_margin) (the PLL
    # still makes the preset's clock), so paths the tools see as just met get slack
    timing_margin: float = 0.0
    extra: dict = field(default_factory=dict)

    def __post_init__(self):
        if self.placer not in PLACERS:
            raise FpgaError(f"placer of board {self.name!r} must be one of {PLACERS}, "
                            f"not {self.placer!r}")
        if self.gemm_dsps is not None and (not isinstance(self.gemm_dsps, int)
                                           or self.gemm_dsps < 0 or not self.open_flow):
            raise FpgaError(f"gemm_dsps of board {self.name!r} must be None or, on an "
                            f"open-flow board, an integer >= 0, not {self.gemm_dsps!r}")
        if not isinstance(self.timing_ripup, bool):
            raise FpgaError(f"timing_ripup of board {self.name!r} must be True or False, "
                            f"not {self.timing_ripup!r}")
        if not isinstance(self.timing_margin, (int, float)) or \
                not 0.0 <= self.timing_margin <= MAX_TIMING_MARGIN or \
                (self.timing_margin and not self.open_flow):
            raise FpgaError(f"timing_margin of board {self.name!r} must be 0 or, on an "
                            f"open-flow board, a fraction up to {MAX_TIMING_MARGIN}, "
                            f"not {self.timing_margin!r}")

    @property
    def open_flow(self) -> bool:
        return self.flow == "ecp5"

    def route_target_mhz(self, clock_mhz: float) -> float:
        """The clock nextpnr times the design for."""
        return round(clock_mhz * (1.0 + self.timing_margin), 3)

    def cfg(self) -> Config:
        return Config(**self.config, name=self.name)


def _preset_values(name: str) -> dict:
    """A board's Config parameters: the spec preset of the same name."""
    return preset(name).hardware_dict()


_ULX3S_CFG = _preset_values("ulx3s-85f")
_CRAB_CFG = _preset_values("orangecrab-25f")
_PYNQ_CFG = _preset_values("pynq-z1")
_DE10_CFG = _preset_values("de10-nano")

BOARDS: dict[str, Board] = {b.name: b for b in (
    Board("ulx3s-85f", "Radiona ULX3S (LFE5U-85F)", "ecp5", "LFE5U-85F-6BG381C",
          "amaranth_boards.ulx3s:ULX3S_85F_Platform",
          {"lut": 83640, "ff": 83640, "dsp": 156, "bram": 208}, _ULX3S_CFG,
          dram_bytes=64 * 1024, dsp_product_registers=True, gemm_dsps=0, timing_margin=0.05,
          notes="1x16x8 at 100 MHz: 128 GEMM products from carry-cell rows (hw/carry_rows.py; "
                "the DSPs sit in rows across the die, the products' operands would not reach "
                "them in a cycle), 2 ALU lanes (18-bit MUL: 2 MULT18X18D) + 1 multiplier; "
                "25.6 GOPS; 1x16x16 (256 carry-row products) fits the estimate (docs/fpga.md)"),
    Board("orangecrab-25f", "OrangeCrab r0.2 (LFE5U-25F)", "ecp5", "LFE5U-25F-8MG285C",
          "amaranth_boards.orangecrab_r0_2:OrangeCrabR0_2_25FPlatform",
          {"lut": 24288, "ff": 24288, "dsp": 28, "bram": 56}, _CRAB_CFG,
          dram_bytes=16 * 1024, dsp_product_registers=True, hard_dsp=False,
          global_reset=False,
          notes="1x16x4 at 120 MHz: 23 GEMM + 4 ALU (18-bit MUL) + 1 multipliers fill the 28 "
                "MULT18X18D, the other 41 GEMM products from carry-cell rows; 15.4 GOPS; the "
                "reset through the fabric (a DCCA's input failed to route at 87% of the LUTs)"),
    Board("pynq-z1", "TUL PYNQ-Z1 (Zynq-7020)", "vivado", "xc7z020clg400-1",
          "amaranth_boards.arty_z7:ArtyZ720Platform",
          {"lut": 53200, "ff": 106400, "dsp": 220, "bram": 280}, _PYNQ_CFG,
          hard_dsp=False, soc=PYNQ_Z1,
          notes="VTA's board: 1x16x16, AXI master on S_AXI_HP0, registers on M_AXI_GP0"),
    Board("de10-nano", "Terasic DE10-Nano (Cyclone V SE 5CSEBA6)", "quartus",
          "5CSEBA6U23I7", "amaranth_boards.de10_nano:DE10NanoPlatform",
          {"lut": 83820, "ff": 167640, "dsp": 112, "bram": 553}, _DE10_CFG,
          hard_dsp=False, soc=DE10_NANO,
          notes="1x16x16 with VTA's buffers and a 128-bit bus: 111 of 112 DSP blocks (int8 "
                "products three to a block), 491 of 553 M10K; AXI master on the HPS "
                "f2h_axi_slave, registers on the lightweight bridge"),
)}
# Units of the capacity entries: ECP5 LUT4/FF/MULT18X18D/DP16KD (18 Kbit); Zynq LUT6/FF/
# DSP48E1/RAMB18; Cyclone V ALUT (2 per ALM)/FF (4 per ALM)/variable-precision DSP
# blocks/M10K.


def board_names() -> list[str]:
    return sorted(BOARDS)


def get_board(name: "str | Board") -> Board:
    if isinstance(name, Board):
        return name
    key = str(name).lower().replace("_", "-")
    try:
        return BOARDS[key]
    except KeyError:
        raise FpgaError(f"board must be one of {board_names()}, not {name!r}") from None
