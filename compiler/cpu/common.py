"""Shared pieces of the CPU operator library: targets, kernel memo, vector widths, schedules."""
from __future__ import annotations

import threading
from functools import lru_cache

import numpy as np

from ..errors import ShapeError
from ..ir.dtype import dtype_of
from ..target import Target
from ..te.build import lower_schedule

_memo: dict = {}
_memo_lock = threading.Lock()


@lru_cache(maxsize=None)
def _host(threads: int | None) -> Target:
    return Target.host(threads)


def resolve_target(target: Target | None) -> Target:
    return target if target is not None else _host(None)


def compiled(key: tuple, make, target: Target | None = None):
    """The Kernel for ``key`` on ``target``, building ``make()`` (a Schedule, args, name) once."""
    def make_func():
        sch, args, name = make()
        return lower_schedule(sch, args, name)
    return compiled_func(key, make_func, target)


def compiled_func(key: tuple, make_func, target: Target | None = None):
    """The Kernel for ``key`` on ``target``, building the PrimFunc ``make_func()`` once.

    Functions must write every element of a scratch buffer before reading it (te-lowered
    ones do), so scratch is not zero-filled."""
    from ..llvm import build
    target = resolve_target(target)
    full = key + (target.fingerprint(), target.cpu.threads)
    with _memo_lock:
        kernel = _memo.get(full)
    if kernel is None:
        kernel = build(make_func(), target, zero_scratch=False)
        with _memo_lock:
            _memo[full] = kernel
    return kernel


def vector_lanes(target: Target | None, dtype="float32") -> int:
    bits = dtype_of(dtype).bits
    return max(4, resolve_target(target).cpu.vector_bits // max(bits, 32))


def pick_lanes(extent: int, lanes: int) -> int:
    """Vector width for an axis of ``extent``: the largest power of two dividing it, up to
    ``lanes`` (odd-sized LLVM vectors legalise badly); a short axis (<= lanes) whole."""
    p = 1
    while p * 2 <= lanes and extent % (p * 2) == 0:
        p *= 2
    if p < 4 and extent <= lanes:
        return extent
    return p


def pick_factor(extent: int, limit: int) -> int:
    """The largest divisor of ``extent`` not above ``limit``."""
    for d in range(min(extent, limit), 0, -1):
        if extent % d == 0:
            return d
    return 1


def schedule_elementwise(s, tensor, target=None, parallel_min: int = 2) -> None:
    """Vectorise the last axis (a divisor-sized tile), fuse the rest into one parallel loop."""
    st = s[tensor]
    axes = list(st.leaf_iter_vars)
    last = axes[-1]
    full = vector_lanes(target, tensor.dtype)
    lanes = pick_lanes(last.extent, full)
    if lanes < 4 and last.extent > full:
        lanes = full                  # masked tail on the last (root) axis
    if lanes > 1:
        outer, inner = st.split(last, lanes)
        st.vectorize(inner)
        axes = axes[:-1] + [outer]
    fused = axes[0]
    for ax in axes[1:]:
        fused = st.fuse(fused, ax)
    if fused.extent >= parallel_min:
        st.parallel(fused)


def as_array(x, dtype=None, name="input") -> np.ndarray:
    a = np.ascontiguousarray(x, dtype=dtype)
    if a.ndim == 0:
        raise ShapeError(f"{name} must have at least one dimension, not a scalar")
    return a


def pair(value, name: str) -> tuple[int, int]:
    if isinstance(value, int):
        return value, value
    value = tuple(value)
    if len(value) != 2 or not all(isinstance(v, int) for v in value):
        raise ShapeError(f"{name} must be an int or a pair of ints, not {value!r}")
    return value


def padding4(pad) -> tuple[int, int, int, int]:
    """(top, left, bottom, right) from an int, a (h, w) pair or an ONNX 4-tuple."""
    if isinstance(pad, int):
        return pad, pad, pad, pad
    pad = tuple(pad)
    if len(pad) == 2:
        return pad[0], pad[1], pad[0], pad[1]
    if len(pad) == 4 and all(isinstance(p, int) and p >= 0 for p in pad):
        return pad
    raise ShapeError(f"padding must be an int, (h, w) or (top, left, bottom, right), not {pad!r}")
