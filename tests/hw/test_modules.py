"""Module tests under cocotb + Verilator, all on one build (tiny preset, 128-bit bus, so
DMA entries are both narrower and wider than a beat): GEMM and ALU datapaths, a token
queue, the load unit and the AXI master under back-pressure."""
import pytest

from vtalab.spec import Config, preset

from .rtl import run
from .tops import ModulesTop

BUS_BITS = 128


def top():
    cfg = Config.from_dict(dict(preset("tiny").hardware_dict(), bus_bits=BUS_BITS))
    return ModulesTop(cfg)


@pytest.mark.slow
def test_gemm_alu_and_token_queue():
    run("modules-tiny-128", top(), "tb_units")


@pytest.mark.slow
def test_load_unit_and_axi_master():
    run("modules-tiny-128", top(), "tb_dma", env={"VTALAB_BUS_BITS": str(BUS_BITS)})
