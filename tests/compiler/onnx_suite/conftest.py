"""Fixtures of the ONNX node suite: the cases, generated once per onnx version and cached
(compiler/exec/conformance.py)."""
import pytest

pytest.importorskip("onnx", reason="onnx generates the node test cases")


def in_scope(case, ops) -> bool:
    """All of the case's nodes are default-domain ops vtalab converts."""
    return all(n.op_type in ops and n.domain in ("", "ai.onnx")
               for n in case.model().graph.node)


def split_cases():
    """(in-scope case names, out-of-scope case names), sorted."""
    from vtalab.compiler.exec.conformance import node_cases
    from vtalab.compiler.graph import onnx_ops
    ops = set(onnx_ops())
    cases = node_cases()
    inside = sorted(n for n, c in cases.items() if in_scope(c, ops))
    return inside, sorted(set(cases) - set(inside))
