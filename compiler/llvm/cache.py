"""On-disk cache of compiled objects keyed by (kernel IR hash, target fingerprint).

Default folder: ``$VTALAB_CACHE_DIR/llvm`` or ``~/.cache/vtalab/llvm``. Writes are atomic
(temporary file in the same folder, then ``os.replace``), so concurrent compilers never
see a partial object. ``cache_dir=False`` disables the cache.
"""
from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path

CODEGEN_VERSION = "llvm-codegen-1"


def default_dir() -> Path:
    root = os.environ.get("VTALAB_CACHE_DIR")
    base = Path(root) if root else Path.home() / ".cache" / "vtalab"
    return base / "llvm"


def kernel_key(ir_text: str, target_key: str, opt: int = 3) -> str:
    h = hashlib.sha256()
    for part in (CODEGEN_VERSION, target_key, str(opt), ir_text):
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()


class ObjectCache:
    def __init__(self, folder=None):
        self.folder = Path(folder) if folder else default_dir()

    def path(self, key: str, suffix: str = ".o") -> Path:
        return self.folder / key[:2] / (key + suffix)

    def get(self, key: str, suffix: str = ".o") -> bytes | None:
        try:
            return self.path(key, suffix).read_bytes()
        except OSError:
            return None

    def put(self, key: str, data: bytes, suffix: str = ".o") -> None:
        path = self.path(key, suffix)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=suffix)
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            os.replace(tmp, path)
        except OSError:
            pass        # a read-only or full disk only costs a recompile next time


def open_cache(cache_dir) -> ObjectCache | None:
    if cache_dir is False:
        return None
    return ObjectCache(cache_dir)
