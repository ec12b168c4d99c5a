"""A Dask distributed executor with the `Executor` contract of executor.py.

    with DaskExecutor() as ex:                              # LocalCluster, 2 workers
    with DaskExecutor("tcp://head:8786") as ex:             # an existing scheduler
        for index, outcome in ex.map(fn, items):            # as they complete
            ...
    ex = get_sweep_executor(jobs=2, scheduler=None | "local" | "tcp://...")

Every item yields exactly one `Outcome`. A worker that dies while it runs an item (killed,
out of memory) loses nothing: the scheduler reports ``KilledWorker`` and the item is
submitted again, up to ``retries`` more times ("worker died (N attempts)" after that). The
LocalCluster is started with ``allowed-failures = 0`` so that every death comes back here
and is counted; a remote scheduler may also reschedule on its own (its
``distributed.scheduler.allowed-failures``), so ``attempts`` counts submissions. An
exception raised by ``fn`` is the item's error, not retried (as in `LocalExecutor`). At
most one item per worker thread is in flight, so ``timeout`` runs from the item's start;
a timed-out item's worker is restarted (the hung thread cannot be stopped otherwise).
Results come back to the caller, which alone writes the log.

``fn`` must be importable on the workers (a top-level function of an installed module);
for a SLURM cluster start the scheduler and workers with dask-jobqueue (docs/dse.md).
"""
from __future__ import annotations

import logging
import time
import uuid

from ..errors import CompileError
from .executor import Executor, Outcome, get_executor


# allowed-failures 0: every worker death comes back here as KilledWorker (counted, retried).
# The nanny's default MALLOC_TRIM_THRESHOLD_=65536 made compiling and simulating a point
# 1.45x slower in CPU time (glibc returning memory at every free), and the workers'
# sampling profiler another 1.1x (ResNet-18 points, bench/dse.py); one BLAS thread each.
LOCAL_CLUSTER_CONFIG = {
    "distributed.scheduler.allowed-failures": 0,
    "distributed.worker.profile.enabled": False,
    "distributed.nanny.pre-spawn-environ": {"OMP_NUM_THREADS": 1, "MKL_NUM_THREADS": 1,
                                            "OPENBLAS_NUM_THREADS": 1},
}


def _distributed():
    try:
        import dask
        import distributed
    except ImportError as exc:
        raise CompileError("the Dask executor must have dask[distributed] installed (pip "
                           "install 'vtalab[dse]'), not missing: " + str(exc)) from None
    return dask, distributed


class DaskExecutor(Executor):
    def __init__(self, address: str | None = None, n_workers: int = 2, retries: int = 2,
                 timeout: float | None = None):
        self.address, self.n_workers = address, max(1, int(n_workers))
        self.retries, self.timeout = retries, timeout
        self._client = self._cluster = None

    def client(self):
        if self._client is None:
            dask, distributed = _distributed()
            if self.address is None:
                with dask.config.set(LOCAL_CLUSTER_CONFIG):
                    self._cluster = distributed.LocalCluster(
                        n_workers=self.n_workers, threads_per_worker=1, processes=True,
                        dashboard_address=":0", silence_logs=logging.ERROR)
                self._client = distributed.Client(self._cluster)
            else:
                self._client = distributed.Client(self.address, timeout=30)
        return self._client

    @property
    def jobs(self) -> int:
        return max(1, sum(self.client().nthreads().values()))

    def close(self) -> None:
        client, cluster, self._client, self._cluster = self._client, self._cluster, None, None
        if client is not None:
            client.close()
        if cluster is not None:
            cluster.close()

    def map(self, fn, items):
        _, distributed = _distributed()
        client, items = self.client(), list(items)
        queue, attempts = list(range(len(items))), [0] * len(items)
        running: dict = {}                  # future -> (index, start time)
        tag = f"{getattr(fn, '__name__', 'item')}-{uuid.uuid4().hex[:8]}"
        while queue or running:
            slots = self.jobs
            while queue and len(running) < slots:
                i = queue.pop(0)
                attempts[i] += 1
                fut = client.submit(fn, items[i], pure=False, key=f"{tag}-{i}-a{attempts[i]}")
                running[fut] = (i, time.monotonic())
            try:
                done = distributed.wait(list(running), timeout=self._wait_s(running, queue),
                                        return_when="FIRST_COMPLETED").done
            except (TimeoutError, distributed.TimeoutError):
                done = set()
            for fut in done:
                i, _ = running.pop(fut)
                yield from self._settle(fut, i, attempts, queue, distributed)
            for fut in self._timed_out(running):
                i, _ = running.pop(fut)
                self._abandon(fut)
                yield i, Outcome(None, f"timeout after {self.timeout:g} s", attempts[i])

    def _settle(self, fut, i: int, attempts: list, queue: list, distributed):
        if fut.status == "finished":
            yield i, Outcome(fut.result(), None, attempts[i])
            return
        exc = fut.exception() if fut.status == "error" else None
        if exc is None or isinstance(exc, distributed.KilledWorker):
            if attempts[i] > self.retries:
                yield i, Outcome(None, f"worker died ({attempts[i]} attempts)", attempts[i])
            else:
                queue.insert(0, i)
            return
        yield i, Outcome(None, f"{type(exc).__name__}: {exc}", attempts[i])

    def _abandon(self, fut) -> None:
        """Cancel a hung item and restart the worker that runs it."""
        client = self.client()
        workers = [w for w, keys in client.processing().items() if fut.key in keys]
        fut.cancel()
        if workers:
            client.restart_workers(workers)

    def _wait_s(self, running, queue) -> float | None:
        """Until the oldest item times out; at most a second while items wait for a slot
        (a restarted worker comes back without an event here)."""
        wait = None
        if self.timeout:
            oldest = min(start for _, start in running.values())
            wait = max(0.05, oldest + self.timeout - time.monotonic())
        if queue:
            wait = 1.0 if wait is None else min(wait, 1.0)
        return wait

    def _timed_out(self, running) -> list:
        if not self.timeout:
            return []
        now = time.monotonic()
        return [f for f, (_, start) in running.items() if now - start > self.timeout]


def get_sweep_executor(jobs: int = 1, scheduler: str | None = None,
                       timeout: float | None = None, retries: int = 2) -> Executor:
    """None: the local pool (serial for one job); "local": Dask on a LocalCluster of
    ``jobs`` workers; an address (tcp://host:8786): that Dask scheduler."""
    if scheduler is None:
        return get_executor(jobs, timeout, retries)
    if scheduler == "local":
        return DaskExecutor(None, jobs, retries, timeout)
    if "://" in scheduler:
        return DaskExecutor(scheduler, jobs, retries, timeout)
    raise CompileError(f"scheduler must be 'local' or a Dask scheduler address "
                       f"(tcp://host:8786), not {scheduler!r}")
