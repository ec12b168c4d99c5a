"""GEMM tensorization: loop nests marked ``tensorize`` become Gemm statements.

The marked nest must be the intrinsic exactly: loops over (batch, block_out, block_in)
around ``acc[.., b, o] += cast(inp[.., b, i]) * cast(wgt[.., o, i])`` (the update) or
around ``acc[.., b, o] = 0`` with loops (batch, block_out) (the reduction's init, which
becomes a resetting GEMM). An init from another acc entry (``te.sum(.., init=)``: a
conv starting from its residual) stays a plain store, which inplace_acc then removes.
"""
from __future__ import annotations

from vtalab.spec import Config

from ...errors import LoweringError
from ...ir.expr import Binary, Cast, Const, Load
from ...ir.stmt import Attr, Store
from ...ir.visit import rebuild
from ..intrin import GemmIntrinsic, gemm_intrinsic
from ..nodes import Gemm
from .common import perfect_nest, reject_guards, split_entry


def tensorize_gemm(func, cfg: Config):
    intrin = gemm_intrinsic(cfg)

    def fn(node):
        if isinstance(node, Attr) and node.key == "tensorize":
            return _match(node, intrin, cfg)
        return None

    return func.with_body(rebuild(func.body, fn))


def _match(attr: Attr, intrin: GemmIntrinsic, cfg: Config):
    if isinstance(attr.value, GemmIntrinsic) and attr.value != intrin:
        raise LoweringError(f"tensorize intrinsic must match the config's "
                            f"{intrin.shape} (batch, block_in, block_out), not {attr.value.shape}")
    loops, _, leaf = perfect_nest(attr.body)
    reject_guards(leaf, "a tensorized stage")
    if not isinstance(leaf, Store) or leaf.buffer.scope != "acc":
        raise LoweringError(f"tensorized statement must store into an acc buffer, not {leaf!r}")
    acc_entry, (vb, vo) = split_entry(cfg, leaf.buffer, leaf.indices, loops, "acc", "GEMM output")
    if isinstance(leaf.value, Load) and leaf.value.buffer.scope == "acc":
        return attr.body
    if isinstance(leaf.value, Const):
        if leaf.value.value != 0 or len(loops) != 2:
            raise LoweringError(f"tensorized init must zero one acc entry with 2 loops, not "
                                f"{leaf!r}")
        return Gemm(leaf.buffer, acc_entry, reset=True)
    inp, wgt = _operands(leaf)
    inp_entry, (ib, ii) = split_entry(cfg, inp.buffer, inp.indices, loops, "inp", "GEMM input")
    wgt_entry, (wo, wi) = split_entry(cfg, wgt.buffer, wgt.indices, loops, "wgt", "GEMM weight")
    if (ib, wo) != (vb, vo) or ii != wi or len(loops) != 3:
        raise LoweringError(f"tensorized loops must be batch x block_out x block_in = "
                            f"{intrin.batch}x{intrin.block_out}x{intrin.block_in} with the "
                            f"intrinsic's index pattern, not {[lp.var.name for lp in loops]}")
    return Gemm(leaf.buffer, acc_entry, inp.buffer, inp_entry, wgt.buffer, wgt_entry)


def _operands(leaf: Store):
    v = leaf.value
    ok = isinstance(v, Binary) and v.op == "add" and isinstance(v.a, Load) \
        and v.a.buffer == leaf.buffer and isinstance(v.b, Binary) and v.b.op == "mul"
    if ok:
        a, b = _strip(v.b.a), _strip(v.b.b)
        if isinstance(a, Load) and isinstance(b, Load):
            if a.buffer.scope == "wgt":
                a, b = b, a
            if a.buffer.scope == "inp" and b.buffer.scope == "wgt":
                return a, b
    raise LoweringError(f"tensorized update must be acc[..] += inp[..] * wgt[..] with operands "
                        f"in the inp and wgt scopes, not {leaf!r}")


def _strip(e):
    return e.value if isinstance(e, Cast) else e
