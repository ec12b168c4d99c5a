"""The native thread pool (llvm/threads.py): every chunk runs exactly once, on any extent,
thread count and caller; busy pools fall back to the calling thread; workers join."""
import threading

import numpy as np
import pytest

from vtalab.compiler import te
from vtalab.compiler.llvm import build
from vtalab.compiler.llvm.runtime import thread_pool
from vtalab.compiler.llvm.threads import ThreadPool
from vtalab.compiler.llvm.jit import target_machine
from vtalab.compiler.target import Target
from vtalab.compiler.te.build import lower_schedule

HOST = Target.host(threads=2)


def _kernel(rows, cols=24):
    """out[i, j] = a[i, j] + i + 1 in two parallel stages (one workspace between them)."""
    a = te.placeholder((rows, cols), "float32", "a")
    s1 = te.compute((rows, cols), lambda i, j: a[i, j] + 1.0, name="s1")
    s2 = te.compute((rows, cols), lambda i, j: s1[i, j] + i.astype("float32"), name="s2")
    s = te.create_schedule(s2)
    for t in (s1, s2):
        s[t].parallel(s[t].leaf_iter_vars[0])
    return build(lower_schedule(s, [a, s2], f"par{rows}"), HOST)


def _forced(kernel, a, threads):
    out = np.full_like(a, np.nan)
    kernel._run_parallel(kernel._pointers((a, out)), threads)
    return out


@pytest.mark.parametrize("rows", [1, 2, 3, 7, 64, 1001])
@pytest.mark.parametrize("threads", [2, 3])
def test_every_row_once_for_any_extent(rows, threads):
    kernel = _kernel(rows)
    a = np.random.default_rng(rows).standard_normal((rows, 24)).astype("float32")
    want = a + 1 + np.arange(rows, dtype="float32")[:, None]
    for _ in range(30):
        np.testing.assert_array_equal(_forced(kernel, a, threads), want)


def test_callers_on_two_python_threads_share_the_pool():
    kernels = [_kernel(257), _kernel(129)]
    arrays = [np.random.default_rng(k).standard_normal((n, 24)).astype("float32")
              for k, n in enumerate((257, 129))]
    errors = []

    def hammer(kernel, a):
        want = a + 1 + np.arange(len(a), dtype="float32")[:, None]
        for _ in range(200):
            if not np.array_equal(_forced(kernel, a, 2), want):
                errors.append(kernel.name)
    workers = [threading.Thread(target=hammer, args=ka) for ka in zip(kernels, arrays)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    assert not errors
    assert not thread_pool(2).lock.locked()


def test_a_private_pool_runs_jobs_and_joins_its_workers():
    cpu = Target.host().cpu
    pool = ThreadPool(3, target_machine(cpu.triple, cpu.name, cpu.features))
    kernel = _kernel(50)
    a = np.ones((50, 24), "float32")
    out = np.zeros_like(a)
    kernel._par(*kernel._pointers((a, out)), pool.address)
    np.testing.assert_array_equal(out, 2 + np.arange(50, dtype="float32")[:, None] + 0 * a)
    pool.close()
    assert pool._threads == []
    pool.close()                          # closing twice is harmless
