import zlib

import numpy as np
import pytest

from vtalab.runtime import open_device
from vtalab.spec import preset

PRESETS = ["default", "tiny"]


@pytest.fixture(params=PRESETS)
def cfg(request):
    return preset(request.param)


@pytest.fixture
def dev(cfg):
    with open_device("fsim", cfg, dram_bytes=16 << 20) as device:
        yield device


@pytest.fixture
def rng(request):
    # a fixed seed per test, so a failure reproduces
    return np.random.default_rng(zlib.crc32(request.node.name.encode()))
