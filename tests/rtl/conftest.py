import pytest

from vtalab.spec import preset

from .backends import open_backend


@pytest.fixture(scope="module")
def tiny_rtl():
    """One RTL device on the tiny preset, shared by a test module."""
    with open_backend("rtl", preset("tiny"), dram_bytes=4 << 20) as device:
        yield device
