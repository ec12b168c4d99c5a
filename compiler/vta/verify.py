"""Declarative IR checks run between passes (like tinygrad's spec): what may appear when.

Each rule names the pass after which it starts to hold; rules accumulate down the list.
"""
from __future__ import annotations

from ..errors import VerifyError
from ..ir.expr import Load, Var
from ..ir.stmt import Allocate, Attr, For, SRAM_SCOPES, Store
from ..ir.visit import walk
from .nodes import Alu, Dma, Gemm, UopKernel, VtaStmt


def _no_tensorize(node):
    return isinstance(node, Attr) and node.key == "tensorize", "an unmatched tensorize region"


def _no_copy(node):
    if not isinstance(node, Store):
        return False, ""
    scopes = {n.buffer.scope for n in walk(node.value) if isinstance(n, Load)}
    bad = (node.buffer.scope in SRAM_SCOPES and "global" in scopes) or \
        (node.buffer.scope == "global" and scopes & set(SRAM_SCOPES))
    return bad, "a DRAM<->SRAM copy that is not a DMA"


def _no_store(node):
    return isinstance(node, Store), "a scalar store the accelerator cannot run"


def _no_sram_load(node):
    bad = isinstance(node, Load) and node.buffer.scope in SRAM_SCOPES
    return bad, "a scalar load from an SRAM buffer outside an intrinsic"


def _no_vthread(node):
    return isinstance(node, For) and node.kind == "vthread", "a virtual-thread loop"


def _no_loose_intrinsic(node):
    return isinstance(node, (Gemm, Alu)), "a GEMM/ALU statement outside a micro-op kernel"


RULES = [
    ("inject_dma", _no_copy),
    ("tensorize_gemm", _no_tensorize),
    ("match_alu", _no_store),
    ("match_alu", _no_sram_load),
    ("inject_vthread", _no_vthread),
    ("fold_uops", _no_loose_intrinsic),
]


def verify_ir(func, after: str, pass_names: list[str]) -> None:
    """Raise VerifyError if ``func`` breaks a rule in force after pass ``after``."""
    done = set(pass_names[:pass_names.index(after) + 1])
    active = [rule for name, rule in RULES if name in done]
    _check_scopes(func, after)
    for node in walk(func.body):
        if isinstance(node, UopKernel):
            continue
        for rule in active:
            bad, what = rule(node)
            if bad:
                raise VerifyError(f"IR after {after} must not contain {what}, not {node!r}")


def _check_scopes(func, after: str) -> None:
    """Every Var is bound by an enclosing loop; every buffer is a param or allocated."""
    def visit(node, bound: frozenset, bufs: frozenset):
        if isinstance(node, For):
            if not isinstance(node.extent, int) or node.extent <= 0:
                raise VerifyError(f"loop {node.var.name} extent must be a positive int after "
                                  f"{after}, not {node.extent!r}")
            bound = bound | {node.var}
        if isinstance(node, Allocate):
            bufs = bufs | {node.buffer}
        if isinstance(node, Dma):
            bound = bound | {v for v in (node.y_var, node.x_var) if v is not None}
        if isinstance(node, Var) and node not in bound:
            raise VerifyError(f"variable {node.name} must be bound by an enclosing loop after "
                              f"{after}, not free")
        for b in _buffers(node):
            if b not in bufs:
                raise VerifyError(f"buffer {b.name} must be a parameter or allocated around "
                                  f"its use after {after}, not undeclared")
        from ..ir.visit import children
        if isinstance(node, (UopKernel,)):
            return
        for child in children(node):
            visit(child, bound, bufs)

    visit(func.body, frozenset(), frozenset(func.params))


def _buffers(node):
    if isinstance(node, (Load, Store)):
        return [node.buffer]
    if isinstance(node, Dma):
        return [node.sram, node.dram]
    if isinstance(node, VtaStmt):
        return [getattr(node, b) for b, _ in node.sram_refs() if getattr(node, b) is not None]
    return []
