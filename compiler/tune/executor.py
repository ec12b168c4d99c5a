"""Executors: where measurements (and design points) run.

    with get_executor(jobs=2, timeout=120) as ex:
        for index, outcome in ex.map(fn, items):     # as they complete
            outcome.value | outcome.error

``fn`` is a picklable top-level function and ``items`` its picklable arguments. Every item
yields exactly one outcome: its value, or an error ("timeout after N s", "worker died
(attempt k)", or the exception ``fn`` raised). A worker that dies (killed, out of memory)
takes no item with it: the items it was running go back to the queue and are retried up to
``retries`` times; a timed-out item's worker is killed and the others' items rerun. Only
the caller writes results, so a log never holds half of anything.

`SerialExecutor` runs in-process (jobs=1; no timeouts); `LocalExecutor` is a pool of
worker processes (spawned, so each opens its own Verilator model); a distributed executor
(Dask, for design-space sweeps) implements the same ``map``.
"""
from __future__ import annotations

import concurrent.futures as cf
import multiprocessing as mp
import os
import sys
import time
from dataclasses import dataclass
from typing import Any


@dataclass
class Outcome:
    value: Any = None
    error: str | None = None
    attempts: int = 1


class Executor:
    jobs = 1

    def map(self, fn, items):
        raise NotImplementedError

    def close(self) -> None:
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class SerialExecutor(Executor):
    def map(self, fn, items):
        for i, item in enumerate(items):
            try:
                yield i, Outcome(fn(item))
            except Exception as exc:
                yield i, Outcome(None, f"{type(exc).__name__}: {exc}")


class LocalExecutor(Executor):
    def __init__(self, jobs: int = 2, timeout: float | None = None, retries: int = 2,
                 initializer=None):
        self.jobs, self.timeout, self.retries = max(1, int(jobs)), timeout, retries
        self.initializer = initializer
        self._pool: cf.ProcessPoolExecutor | None = None

    def _get_pool(self) -> cf.ProcessPoolExecutor:
        if self._pool is None:
            self._pool = cf.ProcessPoolExecutor(self.jobs, mp.get_context(_start_method()),
                                                initializer=self.initializer)
        return self._pool

    def prestart(self, workers: int | None = None) -> None:
        """Start ``workers`` (default: all) workers now, so that their start-up (imports,
        the initializer) runs while the caller does something else; ``map`` then finds
        them ready. Their task is a builtin (``os.getpid``): unpickling it imports
        nothing, so a worker loads only what the initializer and its items need."""
        pool = self._get_pool()
        for _ in range(self.jobs if workers is None else min(self.jobs, workers)):
            pool.submit(os.getpid)

    def __exit__(self, exc_type, *exc):
        if exc_type is None:
            self.close()
        else:                       # do not wait for workers still starting up or running
            self._kill_pool()

    def _kill_pool(self) -> None:
        pool, self._pool = self._pool, None
        if pool is None:
            return
        for proc in list((pool._processes or {}).values()):
            proc.kill()
        pool.shutdown(wait=True, cancel_futures=True)

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None

    def map(self, fn, items):
        """Outcomes as they complete. ``items`` may be any iterable: an item is taken from
        it only when a worker is free (an item's index is its place in that order), so a
        generator can still be producing the later items while the first ones run."""
        source, items, queue, attempts = iter(items), [], [], []
        running: dict = {}                     # future -> (index, start time)
        while True:
            while len(running) < self.jobs and (queue or self._take(source, items, queue,
                                                                    attempts)):
                i = queue.pop(0)
                attempts[i] += 1
                try:
                    running[self._get_pool().submit(fn, items[i])] = (i, time.monotonic())
                except cf.process.BrokenProcessPool:     # a worker died as it started
                    queue[:0] = [i] + [k for k, _ in running.values()]
                    running.clear()
                    self._kill_pool()
                    if attempts[i] > self.retries:
                        queue.remove(i)
                        yield i, Outcome(None, f"worker died ({attempts[i]} attempts)",
                                         attempts[i])
            if not running:
                return
            done, _ = cf.wait(running, timeout=self._wait_s(running),
                              return_when=cf.FIRST_COMPLETED)
            broken = False
            for fut in done:
                i, _ = running.pop(fut)
                exc = fut.exception()
                if isinstance(exc, cf.process.BrokenProcessPool):
                    broken = True
                    if attempts[i] > self.retries:
                        yield i, Outcome(None, f"worker died ({attempts[i]} attempts)",
                                         attempts[i])
                    else:
                        queue.insert(0, i)
                elif exc is not None:
                    yield i, Outcome(None, f"{type(exc).__name__}: {exc}", attempts[i])
                else:
                    yield i, Outcome(fut.result(), None, attempts[i])
            late = self._timed_out(running)
            if late or broken:
                for fut, (i, _) in list(running.items()):
                    if i in late:
                        yield i, Outcome(None, f"timeout after {self.timeout:g} s", attempts[i])
                    else:
                        attempts[i] -= 1 if not broken else 0
                        queue.insert(0, i)
                running.clear()
                self._kill_pool()

    @staticmethod
    def _take(source, items: list, queue: list, attempts: list) -> bool:
        """Queue the next item of ``source``; False when it has none left."""
        item = next(source, _END)
        if item is _END:
            return False
        items.append(item)
        attempts.append(0)
        queue.append(len(items) - 1)
        return True

    def _wait_s(self, running) -> float | None:
        if not self.timeout:
            return None
        oldest = min(start for _, start in running.values())
        return max(0.05, oldest + self.timeout - time.monotonic())

    def _timed_out(self, running) -> set:
        if not self.timeout:
            return set()
        now = time.monotonic()
        return {i for i, start in running.values() if now - start > self.timeout}


_END = object()         # the end of an item source (items may be anything, None too)


def _start_method() -> str:
    """spawn (fresh workers, no inherited threads or Verilator models), unless the main
    program cannot be re-imported by a spawned worker (code read from stdin)."""
    main = sys.modules.get("__main__")
    path = getattr(main, "__file__", None)
    return "spawn" if path is None or os.path.exists(path) else "fork"


def get_executor(jobs: int = 1, timeout: float | None = None, retries: int = 2) -> Executor:
    if jobs <= 1 and not timeout:
        return SerialExecutor()
    return LocalExecutor(jobs, timeout, retries)
