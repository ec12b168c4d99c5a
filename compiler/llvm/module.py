"""A PrimFunc -> an LLVM module of region functions plus a serial entry point.

The function body is cut at the top level: root allocations become *workspaces* (buffers
the runtime allocates once and passes like parameters), and the remaining statements
become *regions*. A region whose statement is a ``parallel`` loop is emitted with the loop
range as two i64 arguments, so the runtime can run chunks of it on several threads; runs
of other statements are merged into serial regions. Every region function has the
signature ``void f(ptr noalias buf0, ..., i64 lo, i64 hi)``; ``<name>`` runs all regions
in order on one thread, ``<name>__par(buf0, ..., pool)`` splits the parallel ones over a
native thread pool.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

import llvmlite.ir as ir

from ..errors import CompileError
from ..ir.func import PrimFunc
from ..ir.stmt import Allocate, Attr, For, Seq, seq
from .codegen import FunctionEmitter
from .threads import ENTRY as POOL_ENTRY
from .types import I64, PTR, VOID


@dataclass(frozen=True)
class Region:
    symbol: str
    parallel: int | None      # extent of the loop the runtime may split, None if serial


@dataclass(frozen=True)
class KernelPlan:
    name: str                 # symbol of the serial entry point
    params: tuple             # Buffers passed by the caller
    workspaces: tuple         # Buffers the runtime allocates (root-level Allocates)
    regions: tuple            # Regions in execution order

    @property
    def buffers(self) -> tuple:
        return self.params + self.workspaces

    @property
    def parallel_entry(self) -> str:
        """Symbol running the regions through a native thread pool (``threads.py``)."""
        return self.name + "__par"


def symbol_name(name: str) -> str:
    clean = re.sub(r"[^A-Za-z0-9_]", "_", name)
    return clean if clean and not clean[0].isdigit() else "k_" + clean


def split_regions(func: PrimFunc, merge: bool = True):
    """(workspaces, [(stmt, parallel loop or None)]) of ``func``'s body; ``merge`` joins
    runs of serial statements into one region."""
    body, workspaces = func.body, []
    while isinstance(body, Allocate):
        workspaces.append(body.buffer)
        body = body.body
    stmts = body.stmts if isinstance(body, Seq) else (body,)
    out, pending = [], []
    for s in stmts:
        loop = _parallel_loop(s)
        if loop is None and merge:
            pending.append(s)
            continue
        if pending:
            out.append((seq(*pending), None))
            pending = []
        out.append((s, loop))
    if pending:
        out.append((seq(*pending), None))
    return tuple(workspaces), out


def _parallel_loop(s):
    while isinstance(s, Attr):
        s = s.body
    return s if isinstance(s, For) and s.kind == "parallel" else None


def _declare(module, name, nbuf) -> ir.Function:
    fnty = ir.FunctionType(VOID, [PTR] * nbuf + [I64, I64])
    fn = ir.Function(module, fnty, name=name)
    for arg in fn.args[:nbuf]:
        arg.add_attribute("noalias")
    return fn


def build_module(func: PrimFunc, triple: str = "", data_layout: str = "",
                 fast_exp: bool = True, zero_scratch: bool = True
                 ) -> tuple[ir.Module, KernelPlan]:
    """The LLVM module of ``func`` and the plan the runtime needs to call it;
    ``zero_scratch=False`` leaves allocations uninitialised (for functions that write every
    element before reading it, as te-lowered ones do)."""
    if not isinstance(func, PrimFunc):
        raise CompileError(f"kernel must be a PrimFunc, not {type(func).__name__}")
    plan, parts = plan_kernel(func)
    module = ir.Module(name=func.name)
    if triple:
        module.triple = triple
    if data_layout:
        module.data_layout = data_layout
    buffers = list(plan.buffers)
    for region, (stmt, loop) in zip(plan.regions, parts):
        fn = _declare(module, region.symbol, len(buffers))
        em = FunctionEmitter(fn, buffers, fast_exp, zero_scratch)
        if loop is None:
            em.stmt(stmt)
        else:
            em._s_For(loop, start=fn.args[-2], stop=fn.args[-1])
        em.finish()
    main = _declare(module, plan.name, len(buffers))
    b = ir.IRBuilder(main.append_basic_block("entry"))
    for r in plan.regions:
        args = list(main.args[:len(buffers)])
        args += [ir.Constant(I64, 0), ir.Constant(I64, r.parallel or 0)]
        b.call(module.globals[r.symbol], args)
    b.ret_void()
    _emit_parallel_entry(module, plan)
    return module, plan


def _emit_parallel_entry(module, plan: KernelPlan) -> None:
    """``<name>__par(buf0, ..., pool)``: the regions in order, each parallel one through
    the pool's ``vtalab_parallel_for`` (``threads.py``) with a ``__task(ctx, lo, hi)``
    trampoline that reads the buffer pointers from ``ctx``."""
    nbuf = len(plan.buffers)
    fn = ir.Function(module, ir.FunctionType(VOID, [PTR] * (nbuf + 1)), plan.parallel_entry)
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    ctx = b.alloca(ir.ArrayType(PTR, nbuf))
    for k, arg in enumerate(fn.args[:nbuf]):
        b.store(arg, b.gep(ctx, [ir.Constant(I64, 0), ir.Constant(I64, k)]))
    pool = fn.args[nbuf]
    entry = b.load(b.gep(pool, [ir.Constant(I64, POOL_ENTRY)], source_etype=I64), typ=I64)
    parallel_for = b.inttoptr(entry, ir.FunctionType(VOID, [PTR, PTR, PTR, I64]).as_pointer())
    for r in plan.regions:
        region = module.globals[r.symbol]
        if r.parallel and r.parallel > 1:
            task = _task(module, region, nbuf)
            b.call(parallel_for, [pool, task, b.bitcast(ctx, PTR), ir.Constant(I64, r.parallel)])
        else:
            b.call(region, list(fn.args[:nbuf]) + [ir.Constant(I64, 0),
                                                   ir.Constant(I64, r.parallel or 0)])
    b.ret_void()


def _task(module, region, nbuf: int) -> ir.Function:
    fn = ir.Function(module, ir.FunctionType(VOID, [PTR, I64, I64]), region.name + "__task")
    ctx, lo, hi = fn.args
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    bufs = [b.load(b.gep(ctx, [ir.Constant(I64, k)], source_etype=PTR), typ=PTR)
            for k in range(nbuf)]
    b.call(region, bufs + [lo, hi])
    b.ret_void()
    return fn


def plan_kernel(func: PrimFunc) -> tuple[KernelPlan, list]:
    """The KernelPlan of ``func`` (cheap: no LLVM IR) and its (stmt, loop) regions."""
    if not isinstance(func, PrimFunc):
        raise CompileError(f"kernel must be a PrimFunc, not {type(func).__name__}")
    workspaces, parts = split_regions(func)
    base = symbol_name(func.name)
    regions = tuple(Region(f"{base}__r{k}", loop.extent if loop is not None else None)
                    for k, (_, loop) in enumerate(parts))
    return KernelPlan(base, tuple(func.params), workspaces, regions), parts
