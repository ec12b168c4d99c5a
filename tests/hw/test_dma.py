"""Module tests of the load unit and the AXI master under cocotb + Verilator, on a
128-bit bus (entries both narrower and wider than a beat)."""
import pytest

from vtalab.spec import Config, preset

from .rtl import run
from .tops import DmaTop


@pytest.mark.slow
def test_load_unit_and_axi_master():
    cfg = Config.from_dict(dict(preset("tiny").hardware_dict(), bus_bits=128))
    run("dma-tiny-128", DmaTop(cfg), "tb_dma", env={"VTALAB_BUS_BITS": "128"})
