import zlib

import numpy as np
import pytest

from tests.rtl.backends import BACKENDS, open_backend
from vtalab.spec import preset

PRESETS = ["default", "tiny"]


@pytest.fixture(params=PRESETS)
def cfg(request):
    return preset(request.param)


@pytest.fixture(params=BACKENDS)
def backend(request):
    return request.param


@pytest.fixture
def dev(cfg, backend):
    """A fresh device of each backend: every test using it runs on fsim and on the RTL."""
    with open_backend(backend, cfg, dram_bytes=16 << 20) as device:
        yield device


@pytest.fixture
def rng(request):
    # a fixed seed per test, so a failure reproduces
    return np.random.default_rng(zlib.crc32(request.node.name.encode()))
