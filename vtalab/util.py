"""Host utilities shared by the layers: the ground floor beside spec (it imports only spec,
so every layer may use it; tests/test_layers.py checks both).

- `cache_dir(*parts)`: a folder under vtalab's cache root, ``$VTALAB_CACHE`` or
  ``~/.cache/vtalab`` (Verilator and cocotb builds, LLVM objects, ONNX node cases, DSE
  results each keep a subfolder).
- `blas_threads(n)`: a context in which numpy's BLAS runs on ``n`` threads (threadpoolctl
  when present, else unchanged); `single_threaded_blas()` is ``blas_threads(1)``, used by
  the functional simulator and the calibration pass, whose matrix products are small.
"""
from __future__ import annotations

import contextlib
import os
from pathlib import Path

from vtalab.spec.errors import VtaError

CACHE_ENV = "VTALAB_CACHE"


def cache_dir(*parts: str) -> Path:
    """The folder ``parts`` under the cache root (not created)."""
    root = os.environ.get(CACHE_ENV)
    return (Path(root) if root else Path.home() / ".cache" / "vtalab").joinpath(*parts)


_CONTROLLER = []      # the threadpoolctl controller, found once (a scan of loaded libraries)


def _controller():
    if not _CONTROLLER:
        try:
            from threadpoolctl import ThreadpoolController
        except ImportError:
            _CONTROLLER.append(None)
        else:
            _CONTROLLER.append(ThreadpoolController())
    return _CONTROLLER[0]


def blas_threads(n: int):
    """A context in which BLAS runs on ``n`` threads (a no-op without threadpoolctl)."""
    if not isinstance(n, int) or n < 1:
        raise VtaError(f"BLAS threads must be a positive int, not {n!r}")
    controller = _controller()
    if controller is None:
        return contextlib.nullcontext()
    return controller.limit(limits=n, user_api="blas")


def single_threaded_blas():
    """A context in which BLAS runs on one thread.

    The simulator's and the calibration's matrix products are small: extra BLAS threads
    only add synchronisation, and on a busy machine they wait for each other."""
    return blas_threads(1)
