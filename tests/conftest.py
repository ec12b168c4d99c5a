import os

# Two cores are shared by everything the suite runs: BLAS threads only fight each other.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from pathlib import Path  # noqa: E402

import pytest  # noqa: E402

REPO = Path(__file__).resolve().parents[1]


def shared_dir() -> Path:
    return Path(os.environ.get("VTALAB_SHARED", REPO.parent / "shared"))


@pytest.fixture
def conformance_root() -> Path:
    root = shared_dir() / "conformance" / "vta-hls"
    if not root.is_dir():
        pytest.skip(f"VTA conformance vectors not found at {root} (set VTALAB_SHARED)")
    return root


def pytest_collection_modifyitems(config, items):
    """The longest tests first (a real bitstream, then Verilator builds): with the suite on
    two workers (``-n 2 --dist loadfile``) the one that takes minutes starts at once instead
    of running alone at the end."""
    def rank(item):
        return 0 if item.get_closest_marker("bitstream") else \
            1 if item.get_closest_marker("slow") else 2
    items.sort(key=rank)        # stable: the files' own order otherwise
