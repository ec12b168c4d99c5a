"""Board facts of the boards with a hard processor, read by the vendor flows (vivado.py,
quartus.py) and the board driver's default register address.

What is here is fixed by the board and its processor system, not by vtalab: where the CPU
sees the accelerator's registers, which processor ports the accelerator is wired to, the
fabric pins the project places, the DDR and I/O settings the processor needs. Sources:
Digilent's PYNQ-Z1 reference manual and board files (PS7 presets, LD0 on R14), the Zynq-7000
TRM (M_AXI_GP0 window 0x4000_0000-0x7FFF_FFFF, S_AXI_HP0 32 or 64 bits), Terasic's
DE10-Nano manual and golden hardware reference design (50 MHz FPGA_CLK1_50 on V11, LEDs,
the HPS DDR3), the Cyclone V HPS TRM (lightweight HPS-to-FPGA bridge at 0xFF20_0000, 2 MiB;
FPGA-to-HPS bridge 32, 64 or 128 bits on the fabric side, 64 bits into the L3 interconnect).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from .errors import FpgaError


@dataclass(frozen=True)
class Pin:
    """A fabric pin the project places: the top-level port (bit) and its package pin."""
    port: str               # e.g. "done_led", "LED[0]"
    site: str               # package pin, e.g. "R14", "W15"
    io_standard: str        # in the vendor's spelling: "LVCMOS33", "3.3-V LVTTL"


@dataclass(frozen=True)
class SocFacts:
    """The processor system of a board and how the accelerator attaches to it."""
    processor: str                  # the processor-system IP (Vivado VLNV / Qsys type)
    reg_master: str                 # processor port whose window holds the registers
    reg_window: tuple               # (base, bytes) of that window in the CPU's address map
    reg_base: int                   # CPU address of the accelerator's registers
    dma_slave: str                  # processor port the accelerator's AXI master uses
    dma_widths: tuple               # data widths (bits) dma_slave can be configured to
    irq: str                        # processor interrupt input that ``done`` drives
    fabric_clock: str               # what clocks the accelerator and the bridges
    pins: tuple = ()                # Pins the project places (clock input, LEDs)
    board_clock_mhz: float = 0.0    # oscillator on the fabric clock pin (0: the PS clocks it)
    processor_settings: dict = field(default_factory=dict)   # DDR and I/O the board needs
    memory_ports: tuple = ()        # (name, bits) of the HPS DDR pins exported to the top
    board_files: str = ""           # Vivado board-part glob that applies the preset instead

    def dma_width(self, bus_bits: int) -> int:
        """The widest dma_slave width not above the accelerator's bus (the interconnect
        converts the rest), or the narrowest one for a narrower bus."""
        fitting = [w for w in self.dma_widths if w <= bus_bits]
        return max(fitting) if fitting else min(self.dma_widths)

    def pin(self, port: str) -> Pin:
        for pin in self.pins:
            if pin.port == port:
                return pin
        raise FpgaError(f"pin must be one of {[p.port for p in self.pins]}, not {port!r}")


def soc_of(board) -> SocFacts:
    """The processor-system facts of a vendor-flow Board, or an error naming the board."""
    if board.soc is None:
        raise FpgaError(f"board {board.name} must have processor-system facts (Board.soc) "
                        f"for a {board.flow} project, not None")
    return board.soc


PYNQ_Z1 = SocFacts(
    processor="xilinx.com:ip:processing_system7:5.5",
    reg_master="M_AXI_GP0",
    reg_window=(0x4000_0000, 0x4000_0000),
    reg_base=0x43C0_0000,           # the first address Vivado gives a GP0 slave (PYNQ's too)
    dma_slave="S_AXI_HP0",
    dma_widths=(32, 64),
    irq="IRQ_F2P",
    fabric_clock="FCLK_CLK0",
    pins=(Pin("done_led", "R14", "LVCMOS33"),),                # LD0
    # The PYNQ-Z1 board-file preset, for Vivado without the board files: 50 MHz PS
    # crystal, one 16-bit MT41K256M16 DDR3, 1.8 V MIO bank 1, UART0/SD0/ENET0/USB0.
    processor_settings={
        "PCW_PRESET_BANK1_VOLTAGE": "LVCMOS 1.8V",
        "PCW_CRYSTAL_PERIPHERAL_FREQMHZ": "50",
        "PCW_UIPARAM_DDR_PARTNO": "MT41K256M16 RE-125",
        "PCW_UIPARAM_DDR_BUS_WIDTH": "16 Bit",
        "PCW_UART0_PERIPHERAL_ENABLE": "1", "PCW_UART0_UART0_IO": "MIO 14 .. 15",
        "PCW_SD0_PERIPHERAL_ENABLE": "1", "PCW_SD0_SD0_IO": "MIO 40 .. 45",
        "PCW_ENET0_PERIPHERAL_ENABLE": "1", "PCW_ENET0_ENET0_IO": "MIO 16 .. 27",
        "PCW_USB0_PERIPHERAL_ENABLE": "1",
    },
    board_files="*pynq-z1*",
)

DE10_NANO = SocFacts(
    processor="altera_hps",
    reg_master="h2f_lw_axi_master",
    reg_window=(0xFF20_0000, 0x20_0000),
    reg_base=0xFF20_0000,           # the start of the lightweight bridge's window
    dma_slave="f2h_axi_slave",
    dma_widths=(32, 64, 128),
    irq="f2h_irq0",
    fabric_clock="FPGA_CLK1_50",
    pins=(Pin("FPGA_CLK1_50", "V11", "3.3-V LVTTL"),
          *(Pin(f"LED[{i}]", site, "3.3-V LVTTL") for i, site in
            enumerate(("W15", "AA24", "V16", "V15", "AF26", "AE26", "Y16", "AA23")))),
    board_clock_mhz=50.0,
    # The HPS DDR3 of the DE10-Nano (as in Terasic's golden hardware reference design):
    # two 16-bit DDR3 chips, 1 GiB on a 32-bit bus at 400 MHz.
    processor_settings={
        "MEM_VENDOR": "Micron", "MEM_FORMAT": "DISCRETE", "MEM_DQ_WIDTH": "32",
        "MEM_ROW_ADDR_WIDTH": "15", "MEM_COL_ADDR_WIDTH": "10", "MEM_BANKADDR_WIDTH": "3",
        "MEM_CLK_FREQ": "400.0", "REF_CLK_FREQ": "25.0", "MEM_TCL": "7", "MEM_WTCL": "7",
        "MEM_DRV_STR": "RZQ/6", "MEM_RTT_NOM": "RZQ/6", "MEM_TRCD_NS": "13.75",
        "MEM_TRP_NS": "13.75", "MEM_TRAS_NS": "35.0", "MEM_TRFC_NS": "260.0",
        "MEM_TREFI_US": "7.8", "MEM_TWR_NS": "15.0", "MEM_TFAW_NS": "30.0",
    },
    memory_ports=(("mem_a", 15), ("mem_ba", 3), ("mem_ck", 1), ("mem_ck_n", 1),
                  ("mem_cke", 1), ("mem_cs_n", 1), ("mem_ras_n", 1), ("mem_cas_n", 1),
                  ("mem_we_n", 1), ("mem_reset_n", 1), ("mem_dq", 32), ("mem_dqs", 4),
                  ("mem_dqs_n", 4), ("mem_odt", 1), ("mem_dm", 4), ("oct_rzqin", 1)),
)
