import pytest

pytest.importorskip("llvmlite", reason="llvmlite is not installed (pip install vtalab[llvm])")


@pytest.fixture(autouse=True, scope="session")
def _private_cache(tmp_path_factory):
    """Compiled objects go to a fresh folder, so tests never depend on an old cache."""
    mp = pytest.MonkeyPatch()
    mp.setenv("VTALAB_CACHE", str(tmp_path_factory.mktemp("vtalab-cache")))
    yield
    mp.undo()
