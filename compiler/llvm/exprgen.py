"""Loop-IR expressions -> LLVM values, scalar or (inside a vectorised loop) vector.

Loop variables live as i64; index arithmetic runs in i64 with ``nsw``. Inside a vectorised
loop (``self.vec`` = (var, lanes)) an expression that uses the loop variable becomes an
LLVM vector; anything else stays scalar and is splat on demand. Loads under a condition
(a Select branch, or a vector mask) never touch memory outside their buffer.
"""
from __future__ import annotations

import llvmlite.ir as ir

from ..errors import CompileError
from ..ir.arith import linear
from ..ir.expr import Binary, Call, Cast, Cmp, Const, Expr, Load, Not, Select, Var, INT32
from ..ir.visit import substitute, uses_var, walk
from .intrinsics import intrinsic, math_call
from .types import I32, I64, constant, lanes_of, memory_type, scalar_type

MAX_STRIDE = 4
_ICMP = {"lt": "<", "le": "<=", "gt": ">", "ge": ">=", "eq": "==", "ne": "!="}


def flat_index(buffer, indices) -> Expr:
    """Row-major element offset of ``indices`` in ``buffer`` as an int32 expression."""
    flat, stride = None, 1
    for i, n in reversed(list(zip(indices, buffer.shape))):
        term = i if stride == 1 else Binary("mul", i, Const(stride, INT32))
        flat = term if flat is None else Binary("add", term, flat)
        stride *= n
    return flat if flat is not None else Const(0, INT32)


def affine_in(flat: Expr, var: Var):
    """(coefficient, base) if ``flat`` is ``coefficient * var + base``, else (None, None)."""
    lin = linear(flat)
    for atom in lin.terms:
        if atom != var and uses_var(atom, var):
            return None, None
    return lin.coeff(var), substitute(flat, {var: Const(0, INT32)})


class ExprEmitter:
    """Expression half of the function emitter (``self.b``, ``self.vars``, ``self.ptr``)."""

    b: ir.IRBuilder
    vars: dict
    vec = None          # (Var, lanes) inside a vectorised loop
    mask = None         # i1 vector of active lanes, or None
    guarded = 0         # > 0 while evaluating a conditional branch: loads are clamped
    fast_exp = True

    # ---- helpers ----------------------------------------------------------------------
    def lanes(self) -> int:
        return self.vec[1] if self.vec else 1

    def is_vector(self, e: Expr) -> bool:
        return self.vec is not None and uses_var(e, self.vec[0])

    def splat(self, value, lanes: int):
        if lanes == 1 or lanes_of(value) == lanes:
            return value
        vt = ir.VectorType(value.type, lanes)
        undef = ir.Constant(vt, ir.Undefined)
        one = self.b.insert_element(undef, value, ir.Constant(I32, 0))
        zeros = ir.Constant(ir.VectorType(I32, lanes), [ir.Constant(I32, 0)] * lanes)
        return self.b.shuffle_vector(one, undef, zeros)

    def _pair(self, a, b):
        n = max(lanes_of(a), lanes_of(b))
        return self.splat(a, n), self.splat(b, n)

    def _const_like(self, value, dtype, like):
        return constant(dtype, value, lanes_of(like))

    # ---- index arithmetic (i64) -------------------------------------------------------
    def index(self, e: Expr):
        if isinstance(e, Const):
            return ir.Constant(I64, int(e.value))
        if isinstance(e, Var):
            if self.vec and e == self.vec[0]:
                n = self.vec[1]
                return ir.Constant(ir.VectorType(I64, n), [ir.Constant(I64, k) for k in range(n)])
            v = self.vars.get(e)
            if v is None:
                raise CompileError(f"variable must be bound by an enclosing loop, not {e.name}")
            return v
        if isinstance(e, Binary) and e.dtype.is_int and e.op in ("add", "sub", "mul"):
            a, b = self._pair(self.index(e.a), self.index(e.b))
            op = {"add": self.b.add, "sub": self.b.sub, "mul": self.b.mul}[e.op]
            out = op(a, b)
            out.flags.append("nsw")
            return out
        if isinstance(e, Binary) and e.dtype.is_int and e.op in ("floordiv", "floormod", "min", "max"):
            a, b = self._pair(self.index(e.a), self.index(e.b))
            return self._int_binary(e.op, a, b, signed=True)
        value = self.emit(e)
        return self.b.sext(value, ir.VectorType(I64, lanes_of(value)) if lanes_of(value) > 1
                           else I64) if value.type.width < 64 else value

    # ---- expressions ------------------------------------------------------------------
    def emit(self, e: Expr):
        if self.vec is not None and not self.is_vector(e):
            saved, self.vec = self.vec, None
            try:
                return self.emit(e)
            finally:
                self.vec = saved
        method = getattr(self, "_e_" + type(e).__name__, None)
        if method is None:
            raise CompileError(f"expression must be a loop-IR node, not {type(e).__name__}")
        return method(e)

    def _e_Const(self, e: Const):
        return constant(e.dtype, e.value)

    def _e_Var(self, e: Var):
        idx = self.index(e)
        t = scalar_type(e.dtype)
        if lanes_of(idx) > 1:
            return self.b.trunc(idx, ir.VectorType(t, lanes_of(idx)))
        return self.b.trunc(idx, t) if t != I64 else idx

    def _e_Binary(self, e: Binary):
        if e.dtype.is_float and e.op == "add" and any(
                isinstance(x, Binary) and x.op == "mul" for x in (e.a, e.b)):
            mul, other = (e.a, e.b) if isinstance(e.a, Binary) and e.a.op == "mul" else (e.b, e.a)
            x, y = self._pair(self.emit(mul.a), self.emit(mul.b))
            z = self.emit(other)
            x, z = self._pair(x, z)
            y, z = self._pair(y, z)
            x, y = self._pair(x, y)
            fn = intrinsic(self.b.module, "llvm.fmuladd", x.type, [x.type] * 3)
            return self.b.call(fn, [x, y, z])
        a, b = self._pair(self.emit(e.a), self.emit(e.b))
        if e.dtype.is_float:
            return self._float_binary(e.op, a, b)
        if e.dtype.is_bool:
            return {"and": self.b.and_, "or": self.b.or_}[e.op](a, b)
        return self._int_binary(e.op, a, b, signed=e.dtype.kind == "int")

    def _float_binary(self, op, a, b):
        bb = self.b
        if op in ("min", "max"):
            return bb.select(bb.fcmp_ordered("<" if op == "min" else ">", a, b), a, b)
        fn = {"add": bb.fadd, "sub": bb.fsub, "mul": bb.fmul, "div": bb.fdiv}.get(op)
        if fn is None:
            raise CompileError(f"float operator must be add/sub/mul/div/min/max, not {op}")
        return fn(a, b)

    def _int_binary(self, op, a, b, signed: bool):
        bb = self.b
        simple = {"add": bb.add, "sub": bb.sub, "mul": bb.mul, "shl": bb.shl,
                  "and": bb.and_, "or": bb.or_,
                  "shr": bb.ashr if signed else bb.lshr,
                  "div": bb.sdiv if signed else bb.udiv}
        if op in simple:
            return simple[op](a, b)
        if op in ("min", "max"):
            cmp = bb.icmp_signed if signed else bb.icmp_unsigned
            return bb.select(cmp("<" if op == "min" else ">", a, b), a, b)
        if op in ("floordiv", "floormod"):
            if not signed:
                return (bb.udiv if op == "floordiv" else bb.urem)(a, b)
            return self._floor_divmod(op, a, b)
        raise CompileError(f"integer operator must be one of add/sub/mul/div/floordiv/"
                           f"floormod/min/max/shl/shr/and/or, not {op}")

    def _floor_divmod(self, op, a, b):
        bb = self.b
        q, r = bb.sdiv(a, b), bb.srem(a, b)
        zero = ir.Constant(a.type, None)
        fix = bb.and_(bb.icmp_signed("!=", r, zero),
                      bb.icmp_signed("!=", bb.icmp_signed("<", r, zero), bb.icmp_signed("<", b, zero)))
        if op == "floordiv":
            return bb.sub(q, bb.zext(fix, q.type))
        return bb.select(fix, bb.add(r, b), r)

    def _e_Cmp(self, e: Cmp):
        a, b = self._pair(self.emit(e.a), self.emit(e.b))
        dt = e.a.dtype
        if dt.is_float:
            if e.op == "ne":
                return self.b.fcmp_unordered("!=", a, b)
            return self.b.fcmp_ordered(_ICMP[e.op], a, b)
        if dt.kind == "int":
            return self.b.icmp_signed(_ICMP[e.op], a, b)
        return self.b.icmp_unsigned(_ICMP[e.op], a, b)

    def _e_Not(self, e: Not):
        return self.b.not_(self.emit(e.a))

    def _e_Cast(self, e: Cast):
        return self.convert(self.emit(e.value), e.value.dtype, e.dtype)

    def convert(self, v, src, dst):
        bb, n = self.b, lanes_of(v)
        t = scalar_type(dst)
        t = ir.VectorType(t, n) if n > 1 else t
        if src == dst:
            return v
        if dst.is_bool:
            zero = ir.Constant(v.type, None)
            return bb.fcmp_unordered("!=", v, zero) if src.is_float else bb.icmp_unsigned("!=", v, zero)
        if src.is_float and dst.is_float:
            return (bb.fpext if dst.bits > src.bits else bb.fptrunc)(v, t)
        if src.is_float:
            wide = I32 if dst.bits <= 32 else I64
            wide = ir.VectorType(wide, n) if n > 1 else wide
            conv = (bb.fptosi if dst.kind == "int" or dst.bits < 32 else bb.fptoui)(v, wide)
            return bb.trunc(conv, t) if dst.bits < wide_bits(wide) else conv
        if dst.is_float:
            signed = src.kind == "int"
            return (bb.sitofp if signed else bb.uitofp)(v, t)
        if dst.bits == src.bits:
            return v
        if dst.bits < src.bits:
            return bb.trunc(v, t)
        return (bb.sext if src.kind == "int" else bb.zext)(v, t)

    def _e_Call(self, e: Call):
        args = [self.emit(a) for a in e.args]
        for i in range(1, len(args)):
            args[0], args[i] = self._pair(args[0], args[i])
        if e.dtype.is_int and e.name == "abs":
            zero = ir.Constant(args[0].type, None)
            return self.b.select(self.b.icmp_signed("<", args[0], zero),
                                 self.b.sub(zero, args[0]), args[0])
        return math_call(self.b, e.name, args, self.fast_exp)

    def _e_Select(self, e: Select):
        loads = any(isinstance(n, Load) for x in (e.t, e.f) for n in walk(x))
        if self.vec is not None:
            return self._vector_select(e)
        if not loads:
            c, t, f = self.emit(e.cond), self.emit(e.t), self.emit(e.f)
            return self.b.select(c, t, f)
        return self._branch_select(e)

    def _vector_select(self, e: Select):
        n = self.lanes()
        cond = self.splat(self.emit(e.cond), n)
        saved = self.mask
        self.mask = cond if saved is None else self.b.and_(saved, cond)
        self.guarded += 1
        t = self.emit(e.t)
        notc = self.b.not_(cond)
        self.mask = notc if saved is None else self.b.and_(saved, notc)
        f = self.emit(e.f)
        self.guarded -= 1
        self.mask = saved
        t, f = self._pair(t, f)
        return self.b.select(self.splat(cond, lanes_of(t)), t, f)

    def _branch_select(self, e: Select):
        cond = self.emit(e.cond)
        fn = self.b.function
        then_bb, else_bb, join = (fn.append_basic_block(n) for n in ("sel.t", "sel.f", "sel.j"))
        self.b.cbranch(cond, then_bb, else_bb)
        values = []
        for block, branch in ((then_bb, e.t), (else_bb, e.f)):
            self.b.position_at_end(block)
            values.append((self.emit(branch), self.b.block))
            self.b.branch(join)
        self.b.position_at_end(join)
        phi = self.b.phi(values[0][0].type)
        for v, blk in values:
            phi.add_incoming(v, blk)
        return phi

    # ---- memory -----------------------------------------------------------------------
    def _e_Load(self, e: Load):
        buf = e.buffer
        flat = flat_index(buf, e.indices)
        if self.vec is not None and uses_var(flat, self.vec[0]):
            value = self.vector_load(buf, flat)
        else:
            idx = self.index(flat)
            if self.guarded or self.mask is not None:
                idx = self.clamp(idx, buf.size)
            ptr = self.b.gep(self.ptr(buf), [idx], source_etype=memory_type(buf.dtype))
            value = self.b.load(ptr, typ=memory_type(buf.dtype))
        if buf.dtype.is_bool:
            value = self.b.icmp_unsigned("!=", value, ir.Constant(value.type, None))
        return value

    def clamp(self, idx, size: int):
        bb = self.b
        zero, top = self._const_like(0, "int64", idx), self._const_like(size - 1, "int64", idx)
        idx = bb.select(bb.icmp_signed("<", idx, zero), zero, idx)
        return bb.select(bb.icmp_signed(">", idx, top), top, idx)

    def vector_load(self, buf, flat):
        var, n = self.vec
        coeff, base = affine_in(flat, var)
        mt = memory_type(buf.dtype)
        vt = ir.VectorType(mt, n)
        if coeff == 1:
            saved, self.vec = self.vec, None
            start = self.index(base)
            self.vec = saved
            ptr = self.b.gep(self.ptr(buf), [start], source_etype=mt)
            if self.mask is None:
                return self.b.load(ptr, typ=vt, align=element_align(mt))
            fn = intrinsic(self.b.module, "llvm.masked.load", vt,
                           [ptr.type, I32, self.mask.type, vt], overload=[vt, ptr.type])
            return self.b.call(fn, [ptr, ir.Constant(I32, element_align(mt)), self.mask,
                                    ir.Constant(vt, None)])
        if coeff is not None and 2 <= coeff <= MAX_STRIDE and self.mask is None \
                and not self.guarded:
            return self._strided_load(buf, base, coeff, n, mt)
        idx = self.index(flat)
        if self.mask is not None or self.guarded:
            idx = self.clamp(idx, buf.size)
        out = ir.Constant(vt, ir.Undefined)
        for k in range(n):
            i = self.b.extract_element(idx, ir.Constant(I32, k))
            ptr = self.b.gep(self.ptr(buf), [i], source_etype=mt)
            out = self.b.insert_element(out, self.b.load(ptr, typ=mt), ir.Constant(I32, k))
        return out


    def _strided_load(self, buf, base, stride: int, n: int, mt):
        """Lanes base, base+stride, ...: the span they cover read as full n-lane vectors
        (the last one ending exactly at the span's end, so nothing past it is touched),
        joined and shuffled. Odd-sized vector loads would legalise element by element."""
        saved, self.vec = self.vec, None
        start = self.index(base)
        self.vec = saved
        span = (n - 1) * stride + 1
        vt = ir.VectorType(mt, n)
        offsets = [k * n for k in range(-(-span // n) - 1)] + [span - n]
        pieces = []
        for off in offsets:
            idx = self.b.add(start, ir.Constant(I64, off)) if off else start
            ptr = self.b.gep(self.ptr(buf), [idx], source_etype=mt)
            pieces.append(self.b.load(ptr, typ=vt, align=element_align(mt)))
        wide = _concat(self.b, pieces)
        last = len(offsets) - 1
        lanes = [e if e < last * n else last * n + e - offsets[-1]
                 for e in (k * stride for k in range(n))]
        mask = ir.Constant(ir.VectorType(I32, n), [ir.Constant(I32, i) for i in lanes])
        return self.b.shuffle_vector(wide, ir.Constant(wide.type, ir.Undefined), mask)


def _concat(b: ir.IRBuilder, vectors: list):
    """One vector of the given equal-typed vectors end to end (an odd one out is joined
    with undef lanes)."""
    while len(vectors) > 1:
        joined = []
        for a, c in zip(vectors[::2], vectors[1::2]):
            size = a.type.count + c.type.count
            mask = ir.Constant(ir.VectorType(I32, size), [ir.Constant(I32, i) for i in range(size)])
            joined.append(b.shuffle_vector(a, c, mask))
        if len(vectors) % 2:
            last = vectors[-1]
            size = last.type.count
            mask = ir.Constant(ir.VectorType(I32, 2 * size),
                               [ir.Constant(I32, i) for i in range(2 * size)])
            joined.append(b.shuffle_vector(last, ir.Constant(last.type, ir.Undefined), mask))
        vectors = joined
    return vectors[0]


def wide_bits(t) -> int:
    t = t.element if isinstance(t, ir.VectorType) else t
    return t.width


def element_align(mt) -> int:
    return mt.width // 8 if isinstance(mt, ir.IntType) else {"half": 2, "float": 4,
                                                              "double": 8}[str(mt)]
