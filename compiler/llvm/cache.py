"""On-disk cache of compiled objects keyed by (loop-IR fingerprint, target, options).

The key hashes the PrimFunc's structure (not the LLVM IR), so a hit skips code
generation entirely, and the code generator's own source (``codegen_hash``), so a change
there, or another checkout sharing the folder, never reuses a stale object.

Default folder: ``$VTALAB_CACHE/llvm`` or ``~/.cache/vtalab/llvm``. Writes are atomic
(temporary file in the same folder, then ``os.replace``), so concurrent compilers never
see a partial object. ``cache_dir=False`` disables the cache.
"""
from __future__ import annotations

import dataclasses
import functools
import hashlib
import os
import tempfile
from pathlib import Path

from vtalab.util import cache_dir

CODEGEN_VERSION = "llvm-codegen-6"   # bump when code generation changes
CODEGEN_SOURCES = ("codegen.py", "exprgen.py", "intrinsics.py", "module.py", "types.py",
                   "threads.py")


def default_dir() -> Path:
    return cache_dir("llvm")


def func_fingerprint(func) -> str:
    """Canonical text of a PrimFunc: every node with its dtype, Vars and Buffers numbered
    by first appearance (uids differ between processes, structure does not)."""
    names: dict = {}
    out: list = []

    def visit(node) -> None:
        if isinstance(node, tuple):
            out.append("(")
            for item in node:
                visit(item)
            out.append(")")
            return
        kind = type(node).__name__
        if kind in ("Var", "Buffer"):
            key = (kind, node.uid)
            if key not in names:
                names[key] = len(names)
                extra = f"{node.dtype}" if kind == "Var" else \
                    f"{node.dtype}{list(node.shape)}{node.scope}"
                out.append(f"{kind}#{names[key]}:{node.name}:{extra}")
            else:
                out.append(f"{kind}#{names[key]}")
            return
        if not dataclasses.is_dataclass(node):
            out.append(repr(node))
            return
        out.append(kind + "{")
        for f in dataclasses.fields(node):
            out.append(f.name + "=")
            visit(getattr(node, f.name))
        if hasattr(node, "dtype"):
            out.append(f"dtype={node.dtype}")
        out.append("}")

    out.append(f"func {func.name}")      # symbol names derive from it
    visit(func.params)
    visit(func.body)
    visit(func.outputs)
    return hashlib.sha256(" ".join(out).encode()).hexdigest()


@functools.lru_cache(maxsize=1)
def codegen_hash() -> str:
    """Hash of the code generator's own source: objects from any other version of it (an
    older checkout, another branch sharing the cache folder) never match."""
    h = hashlib.sha256(CODEGEN_VERSION.encode())
    for name in CODEGEN_SOURCES:
        h.update((Path(__file__).with_name(name)).read_bytes())
    return h.hexdigest()


def kernel_key(ir_text: str, target_key: str, opt: int = 3) -> str:
    h = hashlib.sha256()
    for part in (codegen_hash(), target_key, str(opt), ir_text):
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
