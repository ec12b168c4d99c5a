"""ONNX's own backend node tests on vtalab's float path (compiler/exec/conformance.py).

Every case whose operators vtalab converts runs on the float reference interpreter and on
the CPU kernels of the compiled float graph (numpy, and LLVM where an op has one) and must
match onnx's expected outputs, unless `expected.py` lists it as a clear refusal with its
reason. A wrong result, a crash or an unlisted refusal fails; so does a listed case that
passes (keep the list exact). Cases using other operators must be refused with a clear
error (never a crash)."""
import collections

import pytest

from vtalab.compiler.exec.conformance import ISSUE_OPS, node_cases, run_case

from .conftest import split_cases
from .expected import EXPECTED_REFUSALS

IN_SCOPE, OUT_OF_SCOPE = split_cases()


@pytest.fixture(scope="module")
def cases():
    return node_cases()


@pytest.mark.parametrize("name", IN_SCOPE)
def test_node_case(cases, name):
    result = run_case(cases[name])
    if name in EXPECTED_REFUSALS:
        fragment, reason = EXPECTED_REFUSALS[name]
        assert result.status == "unsupported" and fragment in result.detail, \
            f"{name} is listed as refused ({reason}) but is {result.status}: {result.detail}"
    else:
        assert result.status == "pass", f"{result.status}: {result.detail}"


def test_expected_refusals_are_in_scope_cases():
    stale = sorted(set(EXPECTED_REFUSALS) - set(IN_SCOPE))
    assert not stale, f"expected.py lists cases that are not in-scope node tests: {stale}"


def test_other_operators_are_refused_clearly(cases):
    bad = []
    for name in OUT_OF_SCOPE:
        result = run_case(cases[name], cpu_paths=())
        if result.status != "unsupported":
            bad.append(f"{name}: {result.status}: {result.detail[:200]}")
    assert not bad, "cases with unconverted ops must be refused clearly:\n" + "\n".join(bad)


def test_issue_operators_pass_at_their_native_opsets(cases):
    """The operators of the frontend issue: >= 90% of their node tests pass unmodified."""
    counts = collections.Counter()
    for case in cases.values():
        if case.op in ISSUE_OPS:
            counts[run_case(case, cpu_paths=()).status] += 1
    total = sum(counts.values())
    assert counts["fail"] == counts["crash"] == 0
    assert counts["pass"] / total >= 0.9, dict(counts)
