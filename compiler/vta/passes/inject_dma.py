"""DMA injection: copy loop nests between DRAM and SRAM become 2-D LOAD/STORE statements.

A copy is ``sram[...] = dram[...]`` (optionally ``select(in_bounds, dram[...], 0)``: the
LOAD's zero padding) or ``dram[...] = cast(acc[...])`` (a STORE from the out buffer that
mirrors acc). The innermost contiguous loop becomes x, the next one y with a DRAM stride;
any further loops stay as loops around the DMA.
"""
from __future__ import annotations

from vtalab.spec import Config

from ...errors import LoweringError
from ...ir.expr import Cast, Const, Load, Select
from ...ir.stmt import Allocate, Attr, For, IfThen, Seq, Store, SRAM_SCOPES, seq
from ...ir.visit import walk
from ..nodes import Dma
from .common import coefficients, perfect_nest, reject_guards, split_entry, without_vars


def inject_dma(func, cfg: Config):
    return func.with_body(_visit(func.body, cfg))


def _visit(node, cfg):
    if isinstance(node, (For, Attr)):
        loops, attrs, leaf = perfect_nest(node)
        if _is_copy(leaf) is not None and not any(a.key == "tensorize" for a in attrs):
            return _lower_copy(loops, leaf, cfg)
        if isinstance(node, For):
            return For(node.var, node.extent, _visit(node.body, cfg), node.kind)
        return Attr(node.key, node.value, _visit(node.body, cfg))
    if isinstance(node, Seq):
        return seq(*[_visit(s, cfg) for s in node.stmts])
    if isinstance(node, Allocate):
        return Allocate(node.buffer, _visit(node.body, cfg), node.base)
    if isinstance(node, IfThen) and any(_is_copy(n) for n in walk(node)):
        reject_guards(node, "a DMA copy")
    if isinstance(node, Store) and _is_copy(node) is not None:
        return _lower_copy([], node, cfg)
    return node


def _unwrap_load(value):
    cond = None
    if isinstance(value, Cast):
        value = value.value
    if isinstance(value, Select) and isinstance(value.f, Const) and value.f.value == 0:
        cond, value = value.cond, value.t
    if isinstance(value, Cast):
        value = value.value
    return (value, cond) if isinstance(value, Load) else (None, None)


def _is_copy(leaf):
    """'load' or 'store' if ``leaf`` is a DRAM<->SRAM copy store, else None."""
    if not isinstance(leaf, Store):
        return None
    src, _ = _unwrap_load(leaf.value)
    if src is None:
        return None
    if leaf.buffer.scope in SRAM_SCOPES and src.buffer.scope == "global":
        return "load"
    if leaf.buffer.scope == "global" and src.buffer.scope == "acc":
        return "store"
    return None


def _lower_copy(loops, store: Store, cfg: Config):
    direction = _is_copy(store)
    src, cond = _unwrap_load(store.value)
    if direction == "load":
        sram, sram_idx, dram, dram_idx = store.buffer, store.indices, src.buffer, src.indices
        scope = sram.scope
        if sram.dtype != dram.dtype:
            raise LoweringError(f"DMA load into {sram.name} must copy {sram.dtype} data, not "
                                f"{dram.dtype} from {dram.name}")
    else:
        sram, sram_idx, dram, dram_idx = src.buffer, src.indices, store.buffer, store.indices
        scope = "out"
        if cond is not None:
            raise LoweringError(f"DMA store to {dram.name} must not pad, not pad if {cond!r}")
        if dram.dtype.bits != cfg.out_bits:
            raise LoweringError(f"store to {dram.name} must write int{cfg.out_bits} "
                                f"(out_bits), not {dram.dtype}")
    if cond is not None and scope not in ("inp", "acc"):
        raise LoweringError(f"zero padding must load into inp or acc, not {scope} ({sram.name})")
    s_entry, s_tail = split_entry(cfg, sram, sram_idx, loops, scope, "DMA")
    d_entry, d_tail = split_entry(cfg, dram, dram_idx, loops, scope, "DMA")
    if s_tail != d_tail:
        raise LoweringError(f"DMA between {sram.name} and {dram.name} must copy whole entries "
                            f"element for element, not tails {s_tail} and {d_tail}")
    entry_loops = [lp for lp in loops if lp.var not in s_tail]
    if cond is not None and any(v is not None and any(n is v for n in walk(cond)) for v in s_tail):
        raise LoweringError(f"padding of {sram.name} must be per entry, not within one")
    variables = [lp.var for lp in entry_loops]
    cs, cd = coefficients(s_entry, variables), coefficients(d_entry, variables)
    dims = [([lp], lp.extent, cs[lp.var], cd[lp.var]) for lp in reversed(entry_loops)]
    if cond is None:
        dims = _merge(dims)
    x = dims[0] if dims and dims[0][2] == 1 and dims[0][3] == 1 else None
    rest = dims[1:] if x else dims
    x_size = x[1] if x else 1
    y = rest[0] if rest and rest[0][2] == x_size and (direction == "load" or rest[0][3] >= x_size) else None
    rest = rest[1:] if y else rest
    y_size, stride = (y[1], y[3]) if y else (1, x_size)
    folded = [lp.var for d in (x, y) if d for lp in d[0]]
    single = lambda d: d[0][0].var if d and len(d[0]) == 1 else None  # noqa: E731
    dma = Dma(direction, sram, without_vars(s_entry, folded), dram,
              without_vars(d_entry, folded), y_size, x_size, stride, single(y), single(x), cond)
    out = dma
    for loops_, _, _, _ in rest:
        for lp in reversed(loops_):
            out = For(lp.var, lp.extent, out, "serial")
    return out


def _merge(dims):
    """Merge each loop into the one inside it when both sides stay contiguous."""
    out = []
    for d in dims:
        if out:
            loops, ext, cs, cd = out[-1]
            if d[2] == ext * cs and d[3] == ext * cd:
                out[-1] = (d[0] + loops, ext * d[1], cs, cd)
                continue
        out.append(d)
    return out
