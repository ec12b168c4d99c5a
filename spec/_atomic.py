"""Atomic file writes: a reader sees the old file or the new one, never half of one."""
from __future__ import annotations

import os
import tempfile
from pathlib import Path


def write_bytes_atomic(path: "str | os.PathLike", data: bytes) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise


def write_text_atomic(path: "str | os.PathLike", text: str) -> None:
    write_bytes_atomic(path, text.encode())
