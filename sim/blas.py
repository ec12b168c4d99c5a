"""BLAS threading for small products: one thread, set through threadpoolctl when present."""
from __future__ import annotations

import contextlib

_CONTROLLER = []      # the threadpoolctl controller, found once (a scan of loaded libraries)


def single_threaded_blas():
    """A context in which BLAS runs on one thread.

    The simulator's and the calibration's matrix products are small: extra BLAS threads
    only add synchronisation, and on a busy machine they wait for each other."""
    if not _CONTROLLER:
        try:
            from threadpoolctl import ThreadpoolController
        except ImportError:
            _CONTROLLER.append(None)
        else:
            _CONTROLLER.append(ThreadpoolController())
    if _CONTROLLER[0] is None:
        return contextlib.nullcontext()
    return _CONTROLLER[0].limit(limits=1, user_api="blas")
