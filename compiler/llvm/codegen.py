"""Loop-IR statements -> one LLVM function: loops, unrolling, vector loops, stores, scratch.

Kinds of ``For``: serial/parallel/vthread become a loop (the outermost parallel loop of a
region is split into chunks by the runtime, see ``module.py``); ``unroll`` repeats the body
with the variable bound to each constant; ``vectorize`` evaluates the body once on LLVM
vectors of ``extent`` lanes when it is a straight-line body of stores (otherwise a plain
loop that LLVM's loop vectoriser sees). Thread-binding kinds are handled by the CUDA
emitter (``nvptx.py``).
"""
from __future__ import annotations

import llvmlite.ir as ir

from ..errors import CompileError
from ..ir.stmt import Allocate, Attr, Evaluate, For, IfThen, Seq, Store, THREAD_TAGS
from ..ir.visit import uses_var, walk
from .exprgen import ExprEmitter, affine_in, element_align, flat_index
from .intrinsics import intrinsic
from .types import I1, I8, I32, I64, PTR, element_size, lanes_of, memory_type

MAX_UNROLL = 256
MAX_LANES = 64
STACK_LIMIT = 256 * 1024


class FunctionEmitter(ExprEmitter):
    """Emits ``body`` into ``fn`` whose leading arguments are the ``buffers``' pointers."""

    def __init__(self, fn: ir.Function, buffers: list, fast_exp: bool = True,
                 zero_scratch: bool = True):
        self.fn = fn
        self.fast_exp = fast_exp
        self.zero_scratch = zero_scratch     # zero-fill each Allocate (as ir.interp does)
        entry = fn.append_basic_block("entry")
        self.alloca_builder = ir.IRBuilder(entry)
        body = fn.append_basic_block("body")
        self.b = ir.IRBuilder(body)
        self.vars: dict = {}
        self.pointers = {buf: fn.args[i] for i, buf in enumerate(buffers)}

    def ptr(self, buf):
        p = self.pointers.get(buf)
        if p is None:
            raise CompileError(f"buffer must be a parameter or allocated, not {buf.name}")
        return p

    def finish(self) -> None:
        self.b.ret_void()
        self.alloca_builder.position_at_end(self.fn.blocks[0])
        self.alloca_builder.branch(self.fn.blocks[1])

    # ---- statements -------------------------------------------------------------------
    def stmt(self, s) -> None:
        method = getattr(self, "_s_" + type(s).__name__, None)
        if method is None:
            raise CompileError(f"statement must be generic loop IR, not {type(s).__name__}")
        method(s)

    def _s_Seq(self, s: Seq):
        for x in s.stmts:
            self.stmt(x)

    def _s_Attr(self, s: Attr):
        self.stmt(s.body)

    def _s_Evaluate(self, s: Evaluate):
        self.emit(s.value)

    def _s_For(self, s: For, start=None, stop=None):
        kind = s.kind
        if kind in THREAD_TAGS:
            return self.thread_loop(s)
        if kind == "unroll" and s.extent <= MAX_UNROLL and start is None:
            for k in range(s.extent):
                self.vars[s.var] = ir.Constant(I64, k)
                self.stmt(s.body)
            self.vars.pop(s.var, None)
            return None
        if kind == "vectorize" and start is None and self.vec is None and can_vectorize(s):
            return self.vector_loop(s)
        lo = ir.Constant(I64, 0) if start is None else start
        hi = ir.Constant(I64, s.extent) if stop is None else stop
        self.loop(s.var, lo, hi, lambda: self.stmt(s.body))
        return None

    def thread_loop(self, s: For):
        raise CompileError(f"loop kind must be serial/unroll/vectorize/parallel for a CPU "
                           f"target, not {s.kind!r} (bind threads only for cuda)")

    def loop(self, var, lo, hi, body) -> None:
        b = self.b
        pre = b.block
        header = self.fn.append_basic_block("loop")
        inner = self.fn.append_basic_block("loop.body")
        done = self.fn.append_basic_block("loop.end")
        b.branch(header)
        b.position_at_end(header)
        phi = b.phi(I64, name=var.name.replace(".", "_"))
        phi.add_incoming(lo, pre)
        b.cbranch(b.icmp_signed("<", phi, hi), inner, done)
        b.position_at_end(inner)
        self.vars[var] = phi
        body()
        nxt = b.add(phi, ir.Constant(I64, 1))
        nxt.flags.append("nsw")
        phi.add_incoming(nxt, b.block)
        b.branch(header)
        b.position_at_end(done)
        self.vars.pop(var, None)

    def vector_loop(self, s: For) -> None:
        self.vec = (s.var, s.extent)
        try:
            self.stmt(s.body)
        finally:
            self.vec = None

    def _s_IfThen(self, s: IfThen):
        if self.vec is not None and uses_var(s.cond, self.vec[0]):
            return self._masked_if(s)
        cond = self.emit(s.cond)
        then_bb = self.fn.append_basic_block("if.then")
        else_bb = self.fn.append_basic_block("if.else") if s.orelse is not None else None
        join = self.fn.append_basic_block("if.end")
        self.b.cbranch(cond, then_bb, else_bb or join)
        for block, body in ((then_bb, s.then), (else_bb, s.orelse)):
            if block is None:
                continue
            self.b.position_at_end(block)
            self.stmt(body)
            self.b.branch(join)
        self.b.position_at_end(join)
        return None

    def _masked_if(self, s: IfThen):
        cond = self.splat(self.emit(s.cond), self.vec[1])
        saved = self.mask
        for branch, c in ((s.then, cond), (s.orelse, None)):
            if branch is None:
                continue
            c = c if c is not None else self.b.not_(cond)
            self.mask = c if saved is None else self.b.and_(saved, c)
            self.stmt(branch)
        self.mask = saved

    def _s_Store(self, s: Store):
        buf = s.buffer
        flat = flat_index(buf, s.indices)
        value = self.emit(s.value)
        mt = memory_type(buf.dtype)
        if buf.dtype.is_bool:
            value = self.b.zext(value, ir.VectorType(I8, lanes_of(value))
                                if lanes_of(value) > 1 else I8)
        if self.vec is not None and uses_var(flat, self.vec[0]):
            return self._vector_store(buf, flat, value, mt)
        if self.vec is not None and lanes_of(value) > 1:
            raise CompileError(f"vectorised store to {buf.name} must depend on the vector "
                               f"variable, not a single element")
        ptr = self.b.gep(self.ptr(buf), [self.index(flat)], source_etype=mt)
        self.b.store(value, ptr)
        return None

    def _vector_store(self, buf, flat, value, mt):
        var, n = self.vec
        value = self.splat(value, n)
        coeff, base = affine_in(flat, var)
        if coeff == 1:
            saved, self.vec = self.vec, None
            start = self.index(base)
            self.vec = saved
            ptr = self.b.gep(self.ptr(buf), [start], source_etype=mt)
            if self.mask is None:
                self.b.store(value, ptr, align=element_align(mt))
                return
            fn = intrinsic(self.b.module, "llvm.masked.store", ir.VoidType(),
                           [value.type, PTR, I32, self.mask.type], overload=[value.type, PTR])
            self.b.call(fn, [value, ptr, ir.Constant(I32, element_align(mt)), self.mask])
            return
        idx = self.index(flat)
        for k in range(n):
            lane = ir.Constant(I32, k)
            if self.mask is not None:
                on = self.fn.append_basic_block("lane.on")
                after = self.fn.append_basic_block("lane.end")
                self.b.cbranch(self.b.extract_element(self.mask, lane), on, after)
                self.b.position_at_end(on)
            i = self.b.extract_element(idx, lane)
            ptr = self.b.gep(self.ptr(buf), [i], source_etype=mt)
            self.b.store(self.b.extract_element(value, lane), ptr)
            if self.mask is not None:
                self.b.branch(after)
                self.b.position_at_end(after)

    def _s_Allocate(self, s: Allocate):
        buf = s.buffer
        nbytes = buf.size * element_size(buf.dtype)
        mt = memory_type(buf.dtype)
        if buf.scope in ("shared",):
            raise CompileError(f"scope of {buf.name} must be local or global on a CPU target, "
                               f"not shared")
        if nbytes <= STACK_LIMIT:
            self.alloca_builder.position_at_start(self.alloca_builder.block)
            ptr = self.alloca_builder.alloca(ir.ArrayType(mt, buf.size), name=buf.name)
            ptr.align = 64
            ptr.type = PTR          # llvmlite types allocas as typed pointers
            if self.zero_scratch:
                self._memset(ptr, nbytes)
            self.pointers[buf] = ptr
            self.stmt(s.body)
            return
        malloc = _libc(self.b.module, "malloc", PTR, [I64])
        free = _libc(self.b.module, "free", ir.VoidType(), [PTR])
        ptr = self.b.call(malloc, [ir.Constant(I64, nbytes)])
        if self.zero_scratch:
            self._memset(ptr, nbytes)
        self.pointers[buf] = ptr
        self.stmt(s.body)
        self.b.call(free, [ptr])

    def _memset(self, ptr, nbytes: int) -> None:
        fn = intrinsic(self.b.module, "llvm.memset", ir.VoidType(), [PTR, I8, I64, I1],
                       overload=[PTR, I64])
        self.b.call(fn, [ptr, ir.Constant(I8, 0), ir.Constant(I64, nbytes), ir.Constant(I1, 0)])


def _libc(module, name, ret, args):
    if name in module.globals:
        return module.globals[name]
    return ir.Function(module, ir.FunctionType(ret, args), name=name)


def can_vectorize(loop: For) -> bool:
    """Whether ``loop``'s body can run once on vectors of ``loop.extent`` lanes."""
    if not 2 <= loop.extent <= MAX_LANES:
        return False
    var = loop.var
    for node in walk(loop.body):
        if isinstance(node, (For, Allocate)):
            return False
        if isinstance(node, Store):
            coeff, _ = affine_in(flat_index(node.buffer, node.indices), var)
            if not coeff:
                return False
    return True

