"""What the linter knows of the vendors' IP, from their documentation (not from vtalab).

- Zynq PS7 (PG082 processing_system7 5.5, UG585): the CONFIG.PCW_* properties a project may
  set, the property that must be 1 for each port the block design connects, the 32/64-bit
  HP ports, M_AXI_GP0's address window 0x4000_0000-0x7FFF_FFFF.
- Intel Platform Designer IP (altera_hps, altera_pll, clock_source): parameters, interfaces,
  the HPS DDR conduit's signals (the names Terasic's golden reference design connects) and
  the parameter each HPS bridge needs, with F2S_Width's encoding (0 unused, 1/2/3 = 32/64/
  128 bits) from altera_hps' hw.tcl.
"""
from __future__ import annotations

import re

VLNV = re.compile(r"^[a-z0-9.-]+:[a-z0-9_]+:[A-Za-z0-9_]+:\d+\.\d+$")
RULE = re.compile(r"^[a-z0-9.-]+:bd_rule:[A-Za-z0-9_]+$")
KNOWN_IP = {"xilinx.com:ip:processing_system7": {"5.5"}}
AUTOMATION_RULES = {"xilinx.com:bd_rule:processing_system7", "xilinx.com:bd_rule:axi4"}

PS7_PORT_ENABLES = {
    "M_AXI_GP0": "PCW_USE_M_AXI_GP0", "M_AXI_GP1": "PCW_USE_M_AXI_GP1",
    "S_AXI_HP0": "PCW_USE_S_AXI_HP0", "S_AXI_HP1": "PCW_USE_S_AXI_HP1",
    "S_AXI_HP2": "PCW_USE_S_AXI_HP2", "S_AXI_HP3": "PCW_USE_S_AXI_HP3",
    "S_AXI_ACP": "PCW_USE_S_AXI_ACP", "IRQ_F2P": "PCW_USE_FABRIC_INTERRUPT",
    "FCLK_CLK0": "PCW_EN_CLK0_PORT", "FCLK_RESET0_N": "PCW_EN_RST0_PORT",
}
PS7_HP_WIDTHS = {"32", "64"}
PS7_FCLK0_MHZ = "PCW_FPGA0_PERIPHERAL_FREQMHZ"
PS7_GP0_WINDOW = (0x4000_0000, 0x4000_0000)
PS7_PROPERTIES = set(PS7_PORT_ENABLES.values()) | {
    PS7_FCLK0_MHZ, "PCW_FPGA1_PERIPHERAL_FREQMHZ", "PCW_EN_CLK1_PORT", "PCW_EN_RST1_PORT",
    "PCW_IRQ_F2P_INTR", "PCW_PRESET_BANK0_VOLTAGE", "PCW_PRESET_BANK1_VOLTAGE",
    "PCW_CRYSTAL_PERIPHERAL_FREQMHZ", "PCW_APU_PERIPHERAL_FREQMHZ",
    "PCW_UIPARAM_DDR_PARTNO", "PCW_UIPARAM_DDR_BUS_WIDTH", "PCW_UIPARAM_DDR_ENABLE",
    "PCW_UIPARAM_DDR_FREQ_MHZ", "PCW_UIPARAM_DDR_MEMORY_TYPE",
    *(f"PCW_{p}_PERIPHERAL_ENABLE" for p in ("UART0", "UART1", "SD0", "SD1", "ENET0",
                                              "USB0", "QSPI", "GPIO_MIO_GPIO", "I2C0")),
    "PCW_UART0_UART0_IO", "PCW_UART1_UART1_IO", "PCW_SD0_SD0_IO", "PCW_ENET0_ENET0_IO",
    "PCW_USB0_USB0_IO", "PCW_QSPI_QSPI_IO", "PCW_ENET0_GRP_MDIO_ENABLE",
    *(f"PCW_S_AXI_HP{n}_DATA_WIDTH" for n in range(4)),
}

HPS_BRIDGE_ENABLES = {     # interface -> (parameter, values that leave it disabled)
    "h2f_lw_axi_master": ("LWH2F_Enable", {"false", "0"}),
    "h2f_lw_axi_clock": ("LWH2F_Enable", {"false", "0"}),
    "f2h_axi_slave": ("F2S_Width", {"0"}),
    "f2h_axi_clock": ("F2S_Width", {"0"}),
    "h2f_axi_master": ("S2F_Width", {"0"}),
    "h2f_axi_clock": ("S2F_Width", {"0"}),
    "f2h_irq0": ("F2SINTERRUPT_Enable", {"false", "0"}),
    "f2h_irq1": ("F2SINTERRUPT_Enable", {"false", "0"}),
}
HPS_WIDTH_CODES = {"0": None, "1": 32, "2": 64, "3": 128}
HPS_MEMORY_SIGNALS = ("mem_a", "mem_ba", "mem_ck", "mem_ck_n", "mem_cke", "mem_cs_n",
                      "mem_ras_n", "mem_cas_n", "mem_we_n", "mem_reset_n", "mem_dq",
                      "mem_dqs", "mem_dqs_n", "mem_odt", "mem_dm", "oct_rzqin")
# DDR conduit signals whose width follows an HPS parameter: (parameter, divisor).
HPS_MEMORY_WIDTHS = {"mem_a": ("MEM_ROW_ADDR_WIDTH", 1), "mem_ba": ("MEM_BANKADDR_WIDTH", 1),
                     "mem_dq": ("MEM_DQ_WIDTH", 1), "mem_dqs": ("MEM_DQ_WIDTH", 8),
                     "mem_dqs_n": ("MEM_DQ_WIDTH", 8), "mem_dm": ("MEM_DQ_WIDTH", 8)}
_HPS_MEM = """VENDOR FORMAT DQ_WIDTH ROW_ADDR_WIDTH COL_ADDR_WIDTH BANKADDR_WIDTH CLK_FREQ
CLK_FREQ_MAX TCL WTCL ATCL DRV_STR RTT_NOM RTT_WR TRCD_NS TRP_NS TRAS_NS TRFC_NS TREFI_US
TWR_NS TFAW_NS TRRD_NS TRTP_NS TWTR TINIT_US TMRD_CK VOLTAGE ASR SRT PD DLL_EN BL BT
DQ_PER_DQS NUMBER_OF_DIMMS NUMBER_OF_RANKS_PER_DEVICE NUMBER_OF_RANKS_PER_DIMM
MIRROR_ADDRESSING RANK_MULTIPLICATION_FACTOR USER_LEVELING_MODE VERBOSE INIT_EN INIT_FILE
GUARANTEED_WRITE_INIT IF_DM_PINS_EN""".split()

QSYS_IP = {
    "clock_source": {
        "interfaces": {"clk_in", "clk_in_reset", "clk", "clk_reset"},
        "parameters": {"clockFrequency", "clockFrequencyKnown", "resetSynchronousEdges"},
        "exports": {"clk_in": ("clk",), "clk_in_reset": ("reset_n",)},
    },
    "altera_pll": {
        "interfaces": {"refclk", "reset", "locked", *(f"outclk{i}" for i in range(18))},
        "parameters": {"gui_reference_clock_frequency", "gui_number_of_clocks",
                       "gui_operation_mode", "gui_pll_mode", "gui_use_locked",
                       *(f"gui_{what}{i}" for what in ("output_clock_frequency",
                                                        "phase_shift", "duty_cycle")
                         for i in range(18))},
        "exports": {},
    },
    "altera_hps": {
        "interfaces": set(HPS_BRIDGE_ENABLES) | {"memory", "hps_io", "h2f_reset",
                                                 "h2f_user0_clock", "h2f_mpu_events"},
        "parameters": {"F2S_Width", "S2F_Width", "LWH2F_Enable", "F2SINTERRUPT_Enable",
                       "MPU_EVENTS_Enable", "F2SCLK_COLDRST_Enable", "F2SCLK_WARMRST_Enable",
                       "F2SCLK_DBGRST_Enable", "S2FCLK_USER0CLK_Enable",
                       "S2FCLK_USER0CLK_FREQ", "HPS_PROTOCOL", "REF_CLK_FREQ",
                       "F2SDRAM_Type", "F2SDRAM_Width",
                       *(f"MEM_{name}" for name in _HPS_MEM)},
        "exports": {"memory": HPS_MEMORY_SIGNALS},
    },
}
