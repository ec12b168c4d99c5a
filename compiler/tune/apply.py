"""Apply the best tuning records while compiling.

    with ApplyBest("tune.jsonl") as best:      # or ApplyBest(TuningLog)
        module = compile_model(...)
    best.used                                   # task key -> the record each task used
    best.untuned                                # task keys without a record

Inside the context, `lookup(task)` gives the best measured point of a task (fewest cycles
or seconds among its successful records on the same target), or None; a task without
records is reported once (a warning naming the task). Outside any context `lookup` is None
and compilation uses each template's default (the cost model's or the heuristic's choice).
"""
from __future__ import annotations

import contextvars
import warnings

from .log import TuningLog
from .task import Task

_ACTIVE: contextvars.ContextVar = contextvars.ContextVar("vtalab_apply_best", default=None)


class UntunedWarning(UserWarning):
    """A task was compiled with its default knobs because the log has no record of it."""


class _Choices:
    """A context that answers `lookup(task)` for the code compiled or run inside it."""
    _token = None

    def __enter__(self):
        self._token = _ACTIVE.set(self)
        return self

    def __exit__(self, *exc) -> None:
        _ACTIVE.reset(self._token)

    def lookup(self, task: Task) -> dict | None:
        raise NotImplementedError


class ApplyBest(_Choices):
    def __init__(self, log, warn: bool = True):
        self.log = log if isinstance(log, TuningLog) else TuningLog(log, readonly=True)
        self.warn = warn
        self.used: dict = {}
        self.untuned: list = []

    def lookup(self, task: Task) -> dict | None:
        record = self.log.best(task)
        if record is None:
            if task.key not in self.untuned:
                self.untuned.append(task.key)
                if self.warn:
                    warnings.warn(f"task {task} has no tuning record in {self.log.path}: "
                                  f"using its default knobs", UntunedWarning, stacklevel=3)
            return None
        self.used[task.key] = record
        return dict(record["knobs"])


class Recorded(_Choices):
    """The choices a module recorded at compile time (``stats["tuning"]["used"]``): the
    runner builds its lazily created CPU kernels under this, so a saved module runs with
    the knobs it was compiled with, log or no log."""

    def __init__(self, used: dict):
        self.used = used

    def lookup(self, task: Task) -> dict | None:
        rec = self.used.get(task.key)
        return dict(rec["knobs"]) if rec else None


def current() -> ApplyBest | None:
    return _ACTIVE.get()


def lookup(task: Task) -> dict | None:
    """The best recorded point of ``task`` under the active ApplyBest, else None."""
    active = _ACTIVE.get()
    return active.lookup(task) if active is not None else None
