"""vtalab.util: the host utilities every layer may use."""
import numpy as np
import pytest

from vtalab.util import blas_threads, single_threaded_blas


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
    with pytest.raises(ValueError, match="BLAS threads must be a positive int, not 0"):
        blas_threads(0)
