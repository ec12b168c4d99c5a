"""Integer index arithmetic: affine (linear) forms, simplification, interval bounds, eval."""
from __future__ import annotations

from ..errors import CompileError
from .expr import Expr, Var, Const, Binary, Cmp, Select, Cast, Load, Call, Not, INT32
from .visit import rebuild, walk


# ---- linear forms -------------------------------------------------------------------------

class Linear:
    """sum(coeff * atom) + const, atoms being Vars or non-linear sub-expressions."""

    __slots__ = ("terms", "const")

    def __init__(self, terms: dict | None = None, const: int = 0):
        self.terms = {k: v for k, v in (terms or {}).items() if v}
        self.const = const

    def scaled(self, c: int) -> "Linear":
        return Linear({k: v * c for k, v in self.terms.items()}, self.const * c)

    def plus(self, other: "Linear", sign: int = 1) -> "Linear":
        terms = dict(self.terms)
        for k, v in other.terms.items():
            terms[k] = terms.get(k, 0) + sign * v
        return Linear(terms, self.const + sign * other.const)

    def coeff(self, atom) -> int:
        return self.terms.get(atom, 0)

    def is_const(self) -> bool:
        return not self.terms

    def to_expr(self) -> Expr:
        out = None
        for atom, c in self.terms.items():
            term = atom if c == 1 else Binary("mul", atom, Const(c, INT32)) if c > 0 else None
            if term is None:
                out = Binary("sub", out if out is not None else Const(0, INT32),
                             atom if c == -1 else Binary("mul", atom, Const(-c, INT32)))
                continue
            out = term if out is None else Binary("add", out, term)
        if out is None:
            return Const(self.const, INT32)
        if self.const > 0:
            return Binary("add", out, Const(self.const, INT32))
        if self.const < 0:
            return Binary("sub", out, Const(-self.const, INT32))
        return out


def linear(e: Expr) -> Linear:
    """The affine form of an integer expression (non-linear parts become atoms)."""
    if isinstance(e, Const):
        return Linear({}, int(e.value))
    if isinstance(e, Var):
        return Linear({e: 1})
    if isinstance(e, Binary) and e.dtype.is_int:
        if e.op in ("add", "sub"):
            return linear(e.a).plus(linear(e.b), 1 if e.op == "add" else -1)
        if e.op == "mul":
            la, lb = linear(e.a), linear(e.b)
            if lb.is_const():
                return la.scaled(lb.const)
            if la.is_const():
                return lb.scaled(la.const)
        if e.op == "shl":
            lb = linear(e.b)
            if lb.is_const() and lb.const >= 0:
                return linear(e.a).scaled(1 << lb.const)
        atom = _simplify_atom(e)
        if isinstance(atom, Const):
            return Linear({}, int(atom.value))
        return Linear({atom: 1})
    return Linear({e: 1})


def _simplify_atom(e: Binary) -> Expr:
    a, b = simplify(e.a), simplify(e.b)
    if isinstance(b, Const) and e.op in ("floordiv", "floormod", "shr"):
        c = int(b.value) if e.op != "shr" else 1 << int(b.value)
        la = linear(a)
        if c > 0 and all(v % c == 0 for v in la.terms.values()) and la.const % c == 0:
            if e.op == "floormod":
                return Const(0, INT32)
            return Linear({k: v // c for k, v in la.terms.items()}, la.const // c).to_expr()
    if isinstance(a, Const) and isinstance(b, Const):
        return Const(_fold(e.op, int(a.value), int(b.value)), INT32)
    return Binary(e.op, a, b)


def _fold(op: str, a: int, b: int) -> int:
    return {"add": a + b, "sub": a - b, "mul": a * b,
            "floordiv": a // b if b else 0, "floormod": a % b if b else 0,
            "min": min(a, b), "max": max(a, b), "shl": a << b if b >= 0 else a,
            "shr": a >> b if b >= 0 else a}[op]


def simplify(e: Expr) -> Expr:
    """Canonical affine form of integer index expressions (others simplified inside)."""
    if isinstance(e, (Const, Var)):
        return e
    if isinstance(e, Binary) and e.dtype.is_int:
        return linear(e).to_expr()
    return rebuild(e, lambda n: linear(n).to_expr()
                   if isinstance(n, Binary) and n.dtype.is_int and n.op in ("add", "sub", "mul")
                   else None)


def const_value(e) -> int | None:
    if isinstance(e, int):
        return e
    lin = linear(e)
    return lin.const if lin.is_const() else None


def same(a: Expr, b: Expr) -> bool:
    """Whether two integer expressions are provably equal (their difference folds to 0)."""
    return const_value(Binary("sub", a, b)) == 0


# ---- interval bounds ----------------------------------------------------------------------

def bounds(e: Expr, ranges: dict) -> tuple[Expr, Expr]:
    """Inclusive (lo, hi) of ``e`` when each Var in ``ranges`` spans its (lo, hi) pair."""
    lo, hi = _bounds(e, ranges)
    return simplify(lo), simplify(hi)


def _bounds(e: Expr, ranges: dict) -> tuple[Expr, Expr]:
    if isinstance(e, Const):
        return e, e
    if isinstance(e, Var):
        return ranges.get(e, (e, e))
    if not any(isinstance(n, Var) and n in ranges for n in walk(e)):
        return e, e
    if isinstance(e, Binary):
        (alo, ahi), (blo, bhi) = _bounds(e.a, ranges), _bounds(e.b, ranges)
        op = e.op
        if op == "add":
            return alo + blo, ahi + bhi
        if op == "sub":
            return alo - bhi, ahi - blo
        if op == "min" or op == "max":
            return Binary(op, alo, blo), Binary(op, ahi, bhi)
        cb = const_value(blo) if same(blo, bhi) else None
        ca = const_value(alo) if same(alo, ahi) else None
        if op == "mul" and (cb is not None or ca is not None):
            (lo, hi), c = ((alo, ahi), cb) if cb is not None else ((blo, bhi), ca)
            return (lo * c, hi * c) if c >= 0 else (hi * c, lo * c)
        if op == "shl" and cb is not None:
            return alo * (1 << cb), ahi * (1 << cb)
        if op in ("floordiv", "shr") and cb is not None and cb >= 0:
            c = cb if op == "floordiv" else 1 << cb
            if c > 0:
                return Binary("floordiv", alo, Const(c, INT32)), Binary("floordiv", ahi, Const(c, INT32))
        if op == "floormod" and cb is not None and cb > 0:
            if same(alo, ahi):
                return Binary("floormod", alo, Const(cb, INT32)), Binary("floormod", ahi, Const(cb, INT32))
            return Const(0, INT32), Const(cb - 1, INT32)
    raise CompileError(f"index expression must be affine in the loop variables (+, -, * or "
                       f"// by constants), not {e!r}")


def upper_bound(e: Expr, ranges: dict) -> int:
    """A constant upper bound of ``e`` given constant ranges of every Var in it."""
    hi = bounds(e, ranges)[1]
    value = const_value(hi)
    if value is None:
        raise CompileError(f"extent must be bounded by a constant, not {hi!r}")
    return value


def lower_bound(e: Expr, ranges: dict) -> int:
    """A constant lower bound of ``e`` given constant ranges of every Var in it."""
    lo = bounds(e, ranges)[0]
    value = const_value(lo)
    if value is None:
        raise CompileError(f"extent must be bounded by a constant, not {lo!r}")
    return value


# ---- evaluation ---------------------------------------------------------------------------

_cache: dict = {}      # structurally equal expressions share one compiled function
_by_id: dict = {}      # id(e) -> (e, fn): skips hashing a deep tree for a node seen before


def compiled(e: Expr):
    """The compiled function ``env -> value`` of ``e`` (cached per node and per structure)."""
    hit = _by_id.get(id(e))
    if hit is not None and hit[0] is e:
        return hit[1]
    fn = _cache.get(e)
    if fn is None:
        from .pysource import compile_expr
        fn = compile_expr(e)
        _cache[e] = fn
    _by_id[id(e)] = (e, fn)     # holding e keeps its id from being reused
    return fn


_vector_cache: dict = {}


def compiled_vector(e: Expr):
    """``compile_expr_vector(e)`` cached per node, or None where ``e`` does not vectorise."""
    hit = _vector_cache.get(id(e))
    if hit is None or hit[0] is not e:
        from .pysource import compile_expr_vector
        try:
            hit = (e, compile_expr_vector(e))
        except CompileError:
            hit = (e, None)
        _vector_cache[id(e)] = hit
    return hit[1]


def evaluate(e: Expr, env: dict) -> int:
    """Value of an integer expression under ``env`` (Var -> int), compiled once per node."""
    return compiled(e)(env)
