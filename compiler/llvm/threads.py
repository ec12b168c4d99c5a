"""A native fork-join thread pool, generated as LLVM IR: parallel regions without Python.

Worker threads (pthreads, started once per thread count and joined at exit) wait on a
generation word: they spin ~20 us, then sleep (a futex on Linux, short sleeps elsewhere).
``vtalab_parallel_for(pool, task, ctx, extent)`` publishes a job, works on it on the
calling thread too and returns when all of it is done. The job is cut into units claimed
from one atomic (generation, front, back) word, the caller from the front and workers
from the back, each claim a shrinking share of what is left: a worker that wakes late or
is descheduled never holds the caller up (the caller takes its share), and the split
point, so which core's cache holds which rows, stays put from call to call.
``task(ctx, lo, hi)`` is a kernel's region trampoline (``module.py``); ``ctx`` holds the
buffer pointers.
"""
from __future__ import annotations

import atexit
import ctypes
import ctypes.util
import functools
import os
import platform
import threading

import llvmlite.ir as ir
import numpy as np

from ..errors import CompileError
from .jit import LoadedObject, compile_object
from .types import I1, I32, I64, PTR, VOID

# the pool's state, in i64 words
GEN_NEXT, DONE, TASK, CTX, EXTENT, UNITS, QUIT, SLEEPERS, GEN, WORKERS, ENTRY = range(11)
STATE_WORDS = 16
UNITS_PER_THREAD = 32           # work units a job is cut into, per thread
CLAIM_SHARE = 4                 # a claim takes 1 / (CLAIM_SHARE * threads) of what is left
SPINS = 1000                    # pause loops (~20 us) before a waiting worker sleeps
CALLER_SPINS = 200              # pause loops before the caller yields its core to a worker
FUTEX_WAIT, FUTEX_WAKE = 128, 129        # the _PRIVATE variants
FUTEX_SYSCALL = {"x86_64": 202, "AMD64": 202, "aarch64": 98, "arm64": 98}
TASK_TYPE = ir.FunctionType(VOID, [PTR, I64, I64])


def _const(v, t=I64):
    return ir.Constant(t, v)


class _Fn:
    """One function of the pool module: its builder, pool fields, atomics, blocks."""

    def __init__(self, module, name, ret, args):
        self.module = module
        self.fn = ir.Function(module, ir.FunctionType(ret, args), name)
        self.b = ir.IRBuilder(self.fn.append_basic_block("entry"))

    def field(self, pool, index: int):
        return self.b.gep(pool, [_const(index)], source_etype=I64)

    def load(self, pool, index: int, typ=I64):
        return self.b.load_atomic(self.field(pool, index), "acquire", typ.width // 8, typ=typ)

    def store(self, pool, index: int, value, order="release"):
        """An atomic store (as an exchange: llvmlite's store_atomic needs typed pointers)."""
        self.b.atomic_rmw("xchg", self.field(pool, index), value, order)

    def blocks(self, *names):
        return [self.fn.append_basic_block(n) for n in names]

    def declare(self, name, ret, args, var_arg=False):
        fn = self.module.globals.get(name)
        return fn or ir.Function(self.module, ir.FunctionType(ret, args, var_arg=var_arg), name)

    def pause(self):
        if platform.machine() in ("x86_64", "AMD64"):
            self.b.call(self.declare("llvm.x86.sse2.pause", VOID, []), [])

    def futex(self, word, op: int, value):
        """futex(word, op, value) on Linux; elsewhere a 50 us sleep in place of a wait."""
        number = FUTEX_SYSCALL.get(platform.machine())
        if platform.system() == "Linux" and number is not None:
            syscall = self.declare("syscall", I64, [I64], var_arg=True)
            self.b.call(syscall, [_const(number), word, _const(op), value,
                                  ir.Constant(PTR, None)])
        elif op == FUTEX_WAIT:
            self.b.call(self.declare("usleep", I32, [I32]), [_const(50, I32)])


def _run_units(module) -> ir.Function:
    """run(pool, gen, from_back): claim units of job ``gen`` until none is left, running
    each claim as one range. The claim word is gen << 32 | front << 16 | back: the caller
    claims from the front, workers from the back, so with one worker the split point (and
    which core's cache holds which rows) stays put from call to call. A claim takes
    1 / (CLAIM_SHARE * threads) of what is left (guided scheduling): few claims, small last
    ones, so a worker that runs slowly (sharing its core) keeps the caller waiting little."""
    f = _Fn(module, "vtalab_pool_run", VOID, [PTR, I64, I1])
    pool, gen, from_back = f.fn.args
    b = f.b
    head, claim, work, done = f.blocks("head", "claim", "work", "done")
    b.branch(head)
    b.position_at_end(head)
    v = f.load(pool, GEN_NEXT)
    front = b.and_(b.lshr(v, _const(16)), _const(0xFFFF))
    back = b.and_(v, _const(0xFFFF))
    units = f.load(pool, UNITS)
    current = b.icmp_unsigned("==", b.lshr(v, _const(32)), gen)
    left = b.sub(units, b.add(front, back))
    b.cbranch(b.and_(current, b.icmp_signed(">", left, _const(0))), claim, done)
    b.position_at_end(claim)
    share = b.udiv(left, b.mul(b.add(f.load(pool, WORKERS), _const(1)), _const(CLAIM_SHARE)))
    take = b.select(b.icmp_unsigned(">", share, _const(0)), share, _const(1))
    step = b.select(from_back, take, b.shl(take, _const(16)))
    won = b.cmpxchg(f.field(pool, GEN_NEXT), v, b.add(v, step), "acq_rel", "acquire")
    b.cbranch(b.extract_value(won, 1), work, head)
    b.position_at_end(work)              # the job cannot change while a claim is unfinished
    first = b.select(from_back, b.sub(b.sub(units, back), take), front)
    extent = f.load(pool, EXTENT)
    lo = b.udiv(b.mul(first, extent), units)
    hi = b.udiv(b.mul(b.add(first, take), extent), units)
    task = b.inttoptr(f.load(pool, TASK), TASK_TYPE.as_pointer())
    b.call(task, [b.inttoptr(f.load(pool, CTX), PTR), lo, hi])
    b.atomic_rmw("add", f.field(pool, DONE), take, "release")
    b.branch(head)
    b.position_at_end(done)
    b.ret_void()
    return f.fn


def _worker(module, run) -> ir.Function:
    """worker(pool): wait for a new generation (spin, then sleep), run its claims; repeat
    until ``quit``. A pthread start routine."""
    f = _Fn(module, "vtalab_pool_worker", PTR, [PTR])
    pool = f.fn.args[0]
    b = f.b
    wait, spin, sleep, check, job, leave = f.blocks("wait", "spin", "sleep", "check", "job",
                                                    "leave")
    entry = b.block
    seen0 = f.load(pool, GEN, I32)
    b.branch(wait)
    b.position_at_end(wait)
    seen = b.phi(I32)
    spins = b.phi(I64)
    seen.add_incoming(seen0, entry)
    spins.add_incoming(_const(0), entry)
    gen = f.load(pool, GEN, I32)
    quit_ = b.icmp_unsigned("!=", f.load(pool, QUIT), _const(0))
    b.cbranch(quit_, leave, check)
    b.position_at_end(check)
    b.cbranch(b.icmp_unsigned("!=", gen, seen), job, spin)
    b.position_at_end(spin)
    more = b.add(spins, _const(1))
    f.pause()
    b.cbranch(b.icmp_unsigned("<", spins, _const(SPINS)), wait, sleep)
    spins.add_incoming(more, spin)
    seen.add_incoming(seen, spin)
    b.position_at_end(sleep)
    b.atomic_rmw("add", f.field(pool, SLEEPERS), _const(1), "seq_cst")
    f.futex(f.field(pool, GEN), FUTEX_WAIT, b.zext(seen, I64))
    b.atomic_rmw("sub", f.field(pool, SLEEPERS), _const(1), "seq_cst")
    b.branch(wait)
    spins.add_incoming(_const(0), sleep)
    seen.add_incoming(seen, sleep)
    b.position_at_end(job)
    b.call(run, [pool, b.zext(gen, I64), ir.Constant(I1, 1)])
    b.branch(wait)
    spins.add_incoming(_const(0), job)
    seen.add_incoming(gen, job)
    b.position_at_end(leave)
    b.ret(ir.Constant(PTR, None))
    return f.fn


def _parallel_for(module, run) -> ir.Function:
    """parallel_for(pool, task, ctx, extent): run task over 0..extent in claims on the
    caller and the workers; return when all are done."""
    f = _Fn(module, "vtalab_parallel_for", VOID, [PTR, PTR, PTR, I64])
    pool, task, ctx, extent = f.fn.args
    b = f.b
    threads = b.add(f.load(pool, WORKERS), _const(1))
    want = b.mul(threads, _const(UNITS_PER_THREAD))
    units = b.select(b.icmp_unsigned("<", extent, want), extent, want)
    for index, value in ((TASK, b.ptrtoint(task, I64)), (CTX, b.ptrtoint(ctx, I64)),
                         (EXTENT, extent), (UNITS, units), (DONE, _const(0))):
        f.store(pool, index, value, "monotonic")
    gen = b.add(f.load(pool, GEN, I32), _const(1, I32))
    f.store(pool, GEN_NEXT, b.shl(b.zext(gen, I64), _const(32)), "seq_cst")
    f.store(pool, GEN, gen, "seq_cst")
    wake, own, wait, spin, done = f.blocks("wake", "own", "wait", "spin", "done")
    b.cbranch(b.icmp_unsigned("!=", f.load(pool, SLEEPERS), _const(0)), wake, own)
    b.position_at_end(wake)
    f.futex(f.field(pool, GEN), FUTEX_WAKE, _const(0x7FFFFFFF))
    b.branch(own)
    b.position_at_end(own)
    b.call(run, [pool, b.zext(gen, I64), ir.Constant(I1, 0)])
    ran = b.block
    b.branch(wait)
    b.position_at_end(wait)
    spins = b.phi(I64)
    spins.add_incoming(_const(0), ran)
    b.cbranch(b.icmp_unsigned("<", f.load(pool, DONE), units), spin, done)
    b.position_at_end(spin)             # a worker still runs a claim: spin, then yield
    f.pause()
    yield_, back = f.blocks("yield", "back")
    b.cbranch(b.icmp_unsigned("<", spins, _const(CALLER_SPINS)), back, yield_)
    b.position_at_end(yield_)
    b.call(f.declare("sched_yield", I32, []), [])
    b.branch(back)
    b.position_at_end(back)
    spins.add_incoming(b.add(spins, _const(1)), back)
    b.branch(wait)
    b.position_at_end(done)
    b.ret_void()
    return f.fn


def pool_module(triple: str, data_layout: str) -> ir.Module:
    """The LLVM module of the pool: vtalab_pool_run, vtalab_pool_worker,
    vtalab_parallel_for and vtalab_pool_stop (quit and wake every worker)."""
    module = ir.Module(name="vtalab_pool")
    module.triple, module.data_layout = triple, data_layout
    run = _run_units(module)
    _worker(module, run)
    _parallel_for(module, run)
    f = _Fn(module, "vtalab_pool_stop", VOID, [PTR])
    pool = f.fn.args[0]
    f.store(pool, QUIT, _const(1), "seq_cst")
    f.b.atomic_rmw("add", f.field(pool, GEN), _const(1, I32), "seq_cst")
    f.futex(f.field(pool, GEN), FUTEX_WAKE, _const(0x7FFFFFFF))
    f.b.ret_void()
    return module


class ThreadPool:
    """``workers`` native threads serving one pool state; ``lock`` guards one job at a
    time (a caller that cannot take it runs its kernel serially instead)."""

    def __init__(self, workers: int, tm):
        self.state = np.zeros(STATE_WORDS, np.int64)
        self.state[WORKERS] = workers
        self.lock = threading.Lock()
        module = pool_module(tm.triple, str(tm.target_data))
        self._loaded = LoadedObject(compile_object(str(module), tm), tm)
        self.state[ENTRY] = self._loaded.address("vtalab_parallel_for")
        self._stop = ctypes.CFUNCTYPE(None, ctypes.c_void_p)(
            self._loaded.address("vtalab_pool_stop"))
        self._threads = []
        atexit.register(self.close)            # also joins the workers of a failed start
        _live.append(self)
        for _ in range(workers):
            self._threads.append(_start_thread(self._loaded.address("vtalab_pool_worker"),
                                               self.address))

    @property
    def address(self) -> int:
        return self.state.ctypes.data

    def close(self) -> None:
        """Stop and join the workers (their code must outlive them)."""
        threads, self._threads = self._threads, []
        if threads:
            self._stop(self.address)
            for tid in threads:
                _pthreads().pthread_join(tid, None)


_live: list = []


def _forget_threads_in_child() -> None:
    for pool in _live:          # a forked child has none of the parent's threads
        pool._threads = []


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_threads_in_child)


@functools.lru_cache(maxsize=1)
def _pthreads():
    lib = ctypes.CDLL(ctypes.util.find_library("pthread") or None)
    lib.pthread_create.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_void_p,
                                   ctypes.c_void_p, ctypes.c_void_p]
    lib.pthread_join.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
    return lib


def _start_thread(routine: int, arg: int) -> ctypes.c_void_p:
    tid = ctypes.c_void_p()
    err = _pthreads().pthread_create(ctypes.byref(tid), None, routine, arg)
    if err:
        raise CompileError(f"pthread_create must start a pool worker, not fail with {err}")
    return tid
