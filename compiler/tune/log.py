"""A JSON tuning log: measured cycles per (workload, knobs), one file per Config.

    log = TuningLog.open(cfg)            # ~/.cache/vtalab/tune/<fingerprint>.json
    log.get(workload, knobs) -> cycles | None
    log.record(workload, knobs, cycles)  # written at once, atomically (temp file + rename)
    log.best(workload) -> (knobs dict, cycles) | None

Every record is saved as it is made, so an interrupted tuning run resumes where it
stopped; a reader never sees a half-written file. The directory can be moved with
``VTALAB_CACHE_DIR`` (a cache location, not hardware).
"""
from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

from vtalab.spec import Config

from ..errors import CompileError

VERSION = 1


def cache_dir() -> Path:
    root = os.environ.get("VTALAB_CACHE_DIR") or Path.home() / ".cache" / "vtalab"
    return Path(root) / "tune"


def knobs_key(knobs: dict) -> str:
    return json.dumps(knobs, sort_keys=True)


class TuningLog:
    def __init__(self, path: Path, fingerprint: str):
        self.path = Path(path)
        self.fingerprint = fingerprint
        self.entries: dict = {}      # workload -> {knobs_key: cycles}
        if self.path.exists():
            self._load()

    @classmethod
    def open(cls, cfg: Config, directory: Path | None = None) -> "TuningLog":
        fp = cfg.fingerprint()
        return cls(Path(directory or cache_dir()) / f"{fp}.json", fp)

    def _load(self) -> None:
        try:
            data = json.loads(self.path.read_text())
        except (OSError, ValueError) as exc:
            raise CompileError(f"tuning log {self.path} must be valid JSON, not unreadable "
                               f"({exc}); delete it to start over") from exc
        if data.get("fingerprint") != self.fingerprint:
            raise CompileError(f"tuning log {self.path} must be for config fingerprint "
                               f"{self.fingerprint}, not {data.get('fingerprint')}")
        self.entries = {w: dict(r) for w, r in data.get("workloads", {}).items()}

    def get(self, workload: str, knobs: dict) -> int | None:
        return self.entries.get(workload, {}).get(knobs_key(knobs))

    def record(self, workload: str, knobs: dict, cycles: int) -> None:
        self.entries.setdefault(workload, {})[knobs_key(knobs)] = int(cycles)
        self.save()

    def best(self, workload: str):
        """(knobs dict, cycles) of the fewest measured cycles; ties: smallest knobs key."""
        runs = self.entries.get(workload)
        if not runs:
            return None
        key = min(runs, key=lambda k: (runs[k], k))
        return json.loads(key), runs[key]

    def save(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        data = {"version": VERSION, "fingerprint": self.fingerprint,
                "workloads": self.entries}
        fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=self.path.name, suffix=".tmp")
        try:
            with os.fdopen(fd, "w") as f:
                json.dump(data, f, indent=1, sort_keys=True)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, self.path)
        except BaseException:
            if os.path.exists(tmp):
                os.unlink(tmp)
            raise
