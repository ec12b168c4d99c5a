"""ALU pattern matching: elementwise stores on acc become in-place Alu statements.

``inplace_acc`` first makes an acc stage that only transforms another acc stage reuse its
storage; ``match_alu`` then turns ``acc[i] = f(acc[i], ...)`` into a sequence of ALU
operations: add, sub (of an immediate), mul, min, max, shifts (``>>``, ``<<``), hence clip
and relu, each with an immediate or another acc entry as operand. A chain whose root is
another acc stage that stays live (``inplace_acc`` could not reuse its storage) starts with a
MOV of that entry. A chain that ends in a requantisation (optional add of an acc operand,
optional shift by an immediate, clip to int8 bounds) becomes one SAT micro-op (``fuse_sat``).
"""
from __future__ import annotations

from vtalab.spec import Config
from vtalab.spec.isa import imm_range, sat_imm, shift_range

from ...errors import LoweringError
from ...ir.arith import same
from ...ir.expr import Binary, Const, Load
from ...ir.stmt import Allocate, Attr, For, Store, seq
from ...ir.visit import rebuild, walk
from ..nodes import Alu, VtaStmt
from .common import perfect_nest, rewrite_top_down, split_entry

_COMMUTATIVE = ("add", "mul", "min", "max")


def inplace_acc(func, cfg: Config):
    body = func.body
    while True:
        pair = _find_alias(body)
        if pair is None:
            return func.with_body(body)
        dead, keep = pair

        def fn(n, dead=dead, keep=keep):
            if isinstance(n, Allocate) and n.buffer == dead:
                return n.body
            if isinstance(n, Load) and n.buffer == dead:
                return Load(keep, n.indices)
            if isinstance(n, Store) and n.buffer == dead:
                return Store(keep, n.indices, n.value)
            if isinstance(n, VtaStmt):
                return n.map_sram(lambda b, i: (keep if b == dead else b, i))
            return None

        body = rebuild(body, fn)


def _find_alias(body):
    reads: dict = {}
    for n in walk(body):
        if isinstance(n, Store):
            for m in walk(n.value):
                if isinstance(m, Load) and m.buffer != n.buffer:
                    reads[m.buffer] = reads.get(m.buffer, 0) + 1
        if isinstance(n, VtaStmt):
            for bf, _ in n.sram_refs():
                written = bf in ("acc",) or (bf == "sram" and n.direction == "load")
                if not written:
                    reads[getattr(n, bf)] = reads.get(getattr(n, bf), 0) + 1
    for n in walk(body):
        if not (isinstance(n, Store) and n.buffer.scope == "acc"):
            continue
        base = _base(n.value, None)
        if base is None or base.buffer == n.buffer or base.buffer.shape != n.buffer.shape:
            continue
        if reads.get(base.buffer, 0) == 1 and all(same(a, b) for a, b in zip(base.indices, n.indices)):
            return n.buffer, base.buffer
    return None


def _base(e, buffer):
    """The acc Load at the root of an ALU chain (left-most acc operand)."""
    if isinstance(e, Load) and e.buffer.scope == "acc" and (buffer is None or e.buffer == buffer):
        return e
    if isinstance(e, Binary):
        left = _base(e.a, buffer)
        if left is not None or e.op not in _COMMUTATIVE:
            return left
        return _base(e.b, buffer)
    return None


def match_alu(func, cfg: Config):
    def fn(node):
        if isinstance(node, (For, Attr, Store)):
            loops, attrs, leaf = perfect_nest(node)
            if isinstance(leaf, Store) and leaf.buffer.scope == "acc":
                return _lower(loops, leaf, cfg)
        return None

    return func.with_body(rewrite_top_down(func.body, fn))


def _lower(loops, store: Store, cfg: Config):
    dst_entry, tail = split_entry(cfg, store.buffer, store.indices, loops, "acc", "ALU")
    entry_loops = [lp for lp in loops if lp.var not in tail]
    ops = fuse_sat(_chain(store.value, store, cfg), cfg)
    out = []
    for op, operand in ops:
        sat_imm_value = None
        if op == "sat":
            operand, sat_imm_value = operand
            if operand is None:
                operand = sat_imm_value
        if isinstance(operand, Load):
            src_entry, src_tail = split_entry(cfg, operand.buffer, operand.indices, loops, "acc",
                                              "ALU operand")
            if src_tail != tail:
                raise LoweringError(f"ALU operand {operand.buffer.name} must be indexed by the "
                                    f"same entry lanes as {store.buffer.name}, not {src_tail}")
            alu = Alu(op, store.buffer, dst_entry, operand.buffer, src_entry, sat_imm_value)
        else:
            alu = Alu(op, store.buffer, dst_entry, imm=operand)
        for lp in reversed(entry_loops):
            alu = For(lp.var, lp.extent, alu, "serial")
        out.append(alu)
    return seq(*out) if out else seq()


def fuse_sat(ops: list, cfg: Config) -> list:
    """Fold a chain's requantisation tail into one SAT: ``[add acc-operand] [shr imm]``
    then a clip (min and max immediates) to bounds within the signed out_bits range
    becomes SAT (add, shift, clip to the out range, lower bound 0 for a relu), followed by
    a MIN / MAX only for bounds narrower than what SAT clips to."""
    top = (1 << (cfg.out_bits - 1)) - 1
    if len(ops) < 2:
        return ops
    clip = dict(ops[-2:])
    if set(clip) != {"min", "max"} or not all(isinstance(v, int) for v in clip.values()):
        return ops
    lo, hi = clip["max"], clip["min"]
    if not -top - 1 <= lo <= hi <= top:
        return ops
    rest, shift, src = ops[:-2], 0, None
    if rest and rest[-1][0] == "shr" and isinstance(rest[-1][1], int):
        shift, rest = rest[-1][1], rest[:-1]
    if rest and rest[-1][0] == "add" and isinstance(rest[-1][1], Load):
        src, rest = rest[-1][1], rest[:-1]
    relu = lo >= 0
    tail = [("sat", (src, sat_imm(cfg, shift, relu)))]
    if hi < top:
        tail.append(("min", hi))
    if lo != (0 if relu else -top - 1):
        tail.append(("max", lo))
    return rest + tail


def _chain(e, store: Store, cfg: Config) -> list:
    if isinstance(e, Load) and e.buffer.scope == "acc" and \
            all(same(a, b) for a, b in zip(e.indices, store.indices)):
        return [] if e.buffer == store.buffer else [("mov", e)]
    if not isinstance(e, Binary):
        raise LoweringError(f"ALU statement must be a chain of add/sub/mul/min/max/shift on "
                            f"{store.buffer.name}[...], not {e!r}")
    a, b = e.a, e.b
    if e.op in _COMMUTATIVE and _base(a, store.buffer) is None and \
            _base(b, store.buffer) is not None:
        a, b = b, a
    ops = _chain(a, store, cfg)
    return ops + [_operation(e.op, b, cfg)]


def _operation(op: str, operand, cfg: Config):
    shift_lo, shift_hi = shift_range(cfg)
    if isinstance(operand, Const):
        v = int(operand.value)
        if op == "sub":
            op, v = "add", -v
        elif op == "shl":
            op, v = "shr", -v
        if op == "shr" and not shift_lo <= v <= shift_hi:
            raise LoweringError(f"shift amount must be in {shift_lo}..{shift_hi} (acc_bits "
                                f"{cfg.acc_bits}), not {v}")
        if op not in ("add", "mul", "min", "max", "shr"):
            raise LoweringError(f"ALU operation must be add, sub, mul, min, max or a shift, "
                                f"not {op}")
        if not imm_range()[0] <= v <= imm_range()[1]:
            raise LoweringError(f"ALU immediate must be in {imm_range()[0]}..{imm_range()[1]} "
                                f"(the ALU's signed immediate), not {v}")
        return op, v
    if isinstance(operand, Load) and operand.buffer.scope == "acc":
        if op not in ("add", "mul", "min", "max", "shr", "mov"):
            raise LoweringError(f"ALU operation with an acc operand must be add, mul, min, max "
                                f"or shr, not {op}")
        return op, operand
    raise LoweringError(f"ALU operand must be an immediate or an acc entry, not {operand!r}")
