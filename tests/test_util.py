"""vtalab.util: the host utilities every layer may use."""
from pathlib import Path

import numpy as np
import pytest

from vtalab.spec.errors import VtaError
from vtalab.util import blas_threads, cache_dir, single_threaded_blas


def _blas_thread_counts() -> set:
    threadpoolctl = pytest.importorskip("threadpoolctl")
    return {pool["num_threads"] for pool in threadpoolctl.threadpool_info()
            if pool["user_api"] == "blas"}


def test_single_threaded_blas_limits_blas_to_one_thread_and_restores_it():
    np.ones((4, 4)) @ np.ones((4, 4))           # BLAS loaded
    before = _blas_thread_counts()
    if not before:
        pytest.skip("numpy's BLAS is not visible to threadpoolctl")
    with single_threaded_blas():
        assert _blas_thread_counts() == {1}
    assert _blas_thread_counts() == before


def test_blas_threads_refuses_a_non_positive_count():
    with pytest.raises(VtaError, match="BLAS threads must be a positive int, not 0"):
        blas_threads(0)


def test_every_cache_lives_under_one_root(monkeypatch, tmp_path):
    from vtalab.compiler.llvm.cache import default_dir
    from vtalab.dse.area import cache_root as dse_root
    from vtalab.sim.cocotb_runner import cocotb_cache
    from vtalab.sim.rtl.build import cache_root as rtl_root
    monkeypatch.setenv("VTALAB_CACHE", str(tmp_path))
    assert cache_dir("x", "y") == tmp_path / "x" / "y"
    assert {p.parent for p in (default_dir(), dse_root(), cocotb_cache(), rtl_root())} == \
        {tmp_path}
    monkeypatch.delenv("VTALAB_CACHE")
    assert cache_dir("llvm") == Path.home() / ".cache" / "vtalab" / "llvm"
