"""Module tests of the datapaths and the token queue under cocotb + Verilator."""
import pytest

from vtalab.spec import preset

from .rtl import run
from .tops import UnitsTop


@pytest.mark.slow
def test_gemm_alu_and_token_queue():
    run("units-tiny", UnitsTop(preset("tiny")), "tb_units", env={"VTALAB_CONFIG": "tiny"})
