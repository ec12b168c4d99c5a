"""Compile a PrimFunc for the CPU and call it on numpy arrays, on one or several threads.

    kernel = build(func, Target.host(threads=2))
    kernel(a, b, out)                 # arrays in parameter order, written in place

Parallel regions run on a native thread pool per thread count (``threads.py``: one ctypes
call per kernel, chunks handed out dynamically, no Python on the workers). Kernels touching
less than ``PARALLEL_MIN_BYTES`` run on the calling thread; larger ones time their calls
and keep running in the faster mode per thread count, re-timing the other now and then.
"""
from __future__ import annotations

import ctypes
import operator
import threading
import time
from collections import deque

import numpy as np

from ..errors import CompileError
from ..ir.func import PrimFunc
from ..target import Target
from .cache import func_fingerprint, kernel_key, open_cache
from .jit import LoadedObject, compile_object, target_machine
from .module import build_module, plan_kernel
from .threads import ThreadPool

PARALLEL_MIN_BYTES = 1 << 16    # smaller kernels run on the calling thread only
CALIBRATION_RUNS = 3             # timed calls per mode before a kernel picks one
EXPLORE = 32                     # then every EXPLORE-th call times the other mode again
_pool_lock = threading.Lock()
_pools: dict = {}


def thread_pool(threads: int) -> ThreadPool | None:
    """The process-wide native pool of ``threads - 1`` workers (the caller is the last);
    None where threads cannot be started (kernels then run on the calling thread)."""
    with _pool_lock:
        if threads not in _pools:
            t = Target.host().cpu
            try:
                _pools[threads] = ThreadPool(threads - 1, target_machine(
                    t.triple, t.name, t.features))
            except (OSError, AttributeError, CompileError):    # no pthreads here
                _pools[threads] = None
        return _pools[threads]


def chunks(extent: int, parts: int) -> list[tuple[int, int]]:
    """``parts`` near-equal contiguous [lo, hi) ranges covering 0..extent (no empty ones)."""
    parts = max(1, min(parts, extent))
    base, extra = divmod(extent, parts)
    out, lo = [], 0
    for p in range(parts):
        hi = lo + base + (1 if p < extra else 0)
        out.append((lo, hi))
        lo = hi
    return out


class ModeChooser:
    """Serial or parallel for one kernel and thread count, from timings of its real calls
    (each call runs once, in one mode, so results never depend on the choice): the modes
    alternate for the first ``CALIBRATION_RUNS`` calls each, then the one with the faster
    best of its last ``CALIBRATION_RUNS`` timings runs, and every ``EXPLORE``-th call times
    the other again, so a choice made under a burst of load does not last."""

    def __init__(self):
        self.samples = {m: deque(maxlen=CALIBRATION_RUNS) for m in ("serial", "parallel")}
        self.calls = 0

    def pick(self) -> str:
        self.calls += 1
        serial, parallel = (len(v) for v in self.samples.values())
        if min(serial, parallel) < CALIBRATION_RUNS:
            return "serial" if serial <= parallel else "parallel"
        best = {m: min(v) for m, v in self.samples.items()}
        fast = min(best, key=best.get)
        if self.calls % EXPLORE == 0:
            return "parallel" if fast == "serial" else "serial"
        return fast

    def record(self, mode: str, seconds: float) -> None:
        self.samples[mode].append(seconds)

    @property
    def mode(self) -> str | None:
        """The mode the next ordinary call would pick (None while calibrating)."""
        if min(len(v) for v in self.samples.values()) < CALIBRATION_RUNS:
            return None
        return min(self.samples, key=lambda m: min(self.samples[m]))


class Kernel:
    """A compiled PrimFunc: call it with one C-contiguous array per parameter.

    Arrays must not overlap (parameters are ``noalias``). Workspaces belong to the kernel,
    so one Kernel must not run on two threads at once (build another for that)."""

    def __init__(self, func: PrimFunc, plan, obj: bytes, tm, threads: int, cached: bool):
        self.func, self.plan, self.threads, self.cached = func, plan, threads, cached
        self.object_code = obj
        self._loaded = LoadedObject(obj, tm)
        nbuf = len(plan.buffers)
        proto = ctypes.CFUNCTYPE(None, *([ctypes.c_void_p] * nbuf), ctypes.c_int64,
                                 ctypes.c_int64)
        self._main = proto(self._loaded.address(plan.name))
        self._par = ctypes.CFUNCTYPE(None, *([ctypes.c_void_p] * (nbuf + 1)))(
            self._loaded.address(plan.parallel_entry))
        self._regions = [r.parallel for r in plan.regions]
        self._workspaces = [np.zeros(b.shape, b.dtype.numpy) for b in plan.workspaces]
        self._work_ptrs = [w.ctypes.data for w in self._workspaces]
        self._last, self._last_ptrs = (), []
        self._expect = [(b.shape, b.dtype.numpy, b in func.outputs) for b in plan.params]
        nbytes = sum(b.size * b.dtype.numpy.itemsize for b in plan.buffers)
        self._parallel = nbytes >= PARALLEL_MIN_BYTES and any(
            p and p > 1 for p in self._regions)
        self._modes: dict = {}       # threads -> ModeChooser

    @property
    def name(self) -> str:
        return self.func.name

    def _pointers(self, arrays) -> list[int]:
        """Buffer pointers for ``arrays``; the same array objects as the last call reuse
        the last pointers (a referenced array's buffer cannot move or shrink)."""
        if len(arrays) == len(self._last) and all(map(operator.is_, arrays, self._last)):
            return self._last_ptrs
        ptrs = []
        for a, (shape, dt, writeable) in zip(arrays, self._expect):
            if type(a) is not np.ndarray or a.shape != shape or a.dtype != dt or \
                    not a.flags.c_contiguous or (writeable and not a.flags.writeable):
                return self._check(arrays)
            ptrs.append(a.ctypes.data)
        if len(ptrs) != len(self._expect):
            return self._check(arrays)
        self._last, self._last_ptrs = arrays, ptrs + self._work_ptrs
        return self._last_ptrs

    def _check(self, arrays) -> list[int]:
        params = self.plan.params
        if len(arrays) != len(params):
            raise CompileError(f"{self.name} must get {len(params)} arrays "
                               f"({', '.join(b.name for b in params)}), not {len(arrays)}")
        ptrs = []
        for buf, a in zip(params, arrays):
            if not isinstance(a, np.ndarray):
                raise CompileError(f"argument {buf.name} must be a numpy array, not "
                                   f"{type(a).__name__}")
            if a.shape != buf.shape or a.dtype != buf.dtype.numpy:
                raise CompileError(f"argument {buf.name} must be {buf.dtype}{list(buf.shape)}, "
                                   f"not {a.dtype}{list(a.shape)}")
            if not a.flags.c_contiguous:
                raise CompileError(f"argument {buf.name} must be C-contiguous, not strided")
            ptrs.append(a.ctypes.data)
        for buf in self.func.outputs:
            k = params.index(buf)
            if not arrays[k].flags.writeable:
                raise CompileError(f"output {buf.name} must be writeable, not read-only")
        return ptrs + [w.ctypes.data for w in self._workspaces]

    def __call__(self, *arrays, threads: int | None = None) -> None:
        ptrs = self._pointers(arrays)
        threads = self.threads if threads is None else threads
        if threads <= 1 or not self._parallel:
            self._main(*ptrs, 0, 0)
            return
        chooser = self._modes.get(threads)
        if chooser is None:
            chooser = self._modes[threads] = ModeChooser()
        mode = chooser.pick()
        t0 = time.perf_counter()
        if mode == "serial":
            self._main(*ptrs, 0, 0)
        else:
            self._run_parallel(ptrs, threads)
        chooser.record(mode, time.perf_counter() - t0)

    def _run_parallel(self, ptrs, threads: int) -> None:
        pool = thread_pool(threads)
        if pool is None or not pool.lock.acquire(blocking=False):   # busy on another thread
            self._main(*ptrs, 0, 0)
            return
        try:
            self._par(*ptrs, pool.address)
        finally:
            pool.lock.release()


def build(func: PrimFunc, target: Target | None = None, cache_dir=None,
          opt: int = 3, fast_exp: bool = True, zero_scratch: bool = True) -> Kernel:
    """Compile ``func`` for ``target``'s CPU (default: this host), reusing cached objects;
    ``zero_scratch=False``: see ``build_module``."""
    target = target or Target.host()
    cpu = target.cpu
    tm = target_machine(cpu.triple, cpu.name, cpu.features, opt)
    cache = open_cache(cache_dir)
    options = f"{target.fingerprint()}|cpu|exp={fast_exp}|zero={zero_scratch}"
    key = kernel_key(func_fingerprint(func), options, opt)
    obj = cache.get(key) if cache is not None else None
    cached = obj is not None
    if obj is None:
        module, plan = build_module(func, cpu.triple, str(tm.target_data), fast_exp,
                                    zero_scratch)
        obj = compile_object(str(module), tm, opt)
        if cache is not None:
            cache.put(key, obj)
    else:
        plan, _ = plan_kernel(func)
    return Kernel(func, plan, obj, tm, cpu.threads, cached)


def llvm_ir(func: PrimFunc, target: Target | None = None, optimized: bool = False,
            fast_exp: bool = True, zero_scratch: bool = True) -> str:
    """The LLVM IR text of ``func`` (before or after optimisation), for inspection."""
    from .jit import optimized_ir
    target = target or Target.host()
    tm = target_machine(target.cpu.triple, target.cpu.name, target.cpu.features)
    module, _ = build_module(func, target.cpu.triple, str(tm.target_data), fast_exp,
                             zero_scratch)
    return optimized_ir(str(module), tm) if optimized else str(module)
