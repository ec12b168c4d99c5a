"""Imports point one way (DESIGN.md "Layout"): spec <- hw <- sim <- runtime <- compiler,
fpga <- vtalab. Every module of every layer, the face and the benches is parsed and each of
its imports (absolute, relative, inside functions, `importlib.import_module("...")` with a
constant name) is resolved to the layer it lands in and checked against the layer order.

`vtalab.util` (vtalab/util.py) is the ground floor beside spec: host utilities every layer
may use; it imports only spec. Nothing in the package imports `tests` or
`bench`, and benches are self-contained (they import the package, never the tests)."""
import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
GROUND = {"spec", "util"}
#: what each layer may import besides itself
ALLOWED = {
    "spec": set(),
    "util": {"spec"},
    "hw": GROUND,
    "sim": GROUND | {"hw"},
    "runtime": GROUND | {"hw", "sim"},
    "compiler": GROUND | {"hw", "sim", "runtime"},
    "fpga": GROUND | {"hw", "sim", "runtime"},
    "vtalab": GROUND | {"hw", "sim", "runtime", "compiler", "fpga"},
    "bench": GROUND | {"hw", "sim", "runtime", "compiler", "fpga", "vtalab"},
}
FOLDERS = {"spec", "hw", "sim", "runtime", "compiler", "fpga", "vtalab"}


def layer_of_file(path: Path) -> str:
    rel = path.relative_to(ROOT)
    if rel.parts[0] == "vtalab" and rel.parts[1:] == ("util.py",):
        return "util"
    return rel.parts[0]


def module_parts(path: Path) -> list[str]:
    """The dotted name of the file's package, as installed (spec/x/y.py -> vtalab.spec.x)."""
    rel = path.relative_to(ROOT)
    top = [] if rel.parts[0] in ("vtalab", "bench") else [rel.parts[0]]
    return ["vtalab", *top, *rel.parts[1:-1]] if rel.parts[0] != "bench" else ["bench"]


def layer_of_module(name: str) -> str | None:
    """The layer an absolute module name lands in, None outside the project."""
    parts = name.split(".")
    if parts[0] in ("tests", "bench"):
        return parts[0]
    if parts[0] != "vtalab":
        return None
    if len(parts) > 1 and parts[1] in FOLDERS - {"vtalab"}:
        return parts[1]
    if len(parts) > 1 and parts[1] == "util":
        return "util"
    return "vtalab"


def imported_names(path: Path) -> list[tuple[int, str]]:
    """(line, absolute module name) of every import in the file."""
    tree = ast.parse(path.read_text(), str(path))
    package = module_parts(path)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package[:len(package) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            # `from vtalab import sim` imports vtalab.sim: name the submodule
            found += [(node.lineno, f"{base}.{a.name}" if base == "vtalab" else base)
                      for a in node.names]
        elif isinstance(node, ast.Call) and _is_import_module(node.func) and node.args and \
                isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str):
            found.append((node.lineno, node.args[0].value))
    return sorted(found)


def _is_import_module(func) -> bool:
    return (isinstance(func, ast.Attribute) and func.attr == "import_module") or \
        (isinstance(func, ast.Name) and func.id == "import_module")


def violations(folder: str) -> list[str]:
    bad = []
    for path in sorted((ROOT / folder).rglob("*.py")):
        layer = layer_of_file(path)
        for line, name in imported_names(path):
            target = layer_of_module(name)
            if target is None or target == layer or target in ALLOWED[layer]:
                continue
            bad.append(f"{path.relative_to(ROOT)}:{line} ({layer}) imports {name} ({target})")
    return bad


@pytest.mark.parametrize("folder", sorted(FOLDERS | {"bench"}))
def test_imports_point_down(folder):
    bad = violations(folder)
    assert not bad, "imports must point down the layers, not:\n" + "\n".join(bad)


def test_checker_resolves_relative_and_dynamic_imports(tmp_path, monkeypatch):
    """The checker itself: a relative import that climbs out of its layer, a `from vtalab
    import <layer>` and an import_module call are each resolved to the layer they reach."""
    fake = tmp_path / "sim" / "sub"
    fake.mkdir(parents=True)
    (fake / "bad.py").write_text(
        "from ...compiler import x\nfrom vtalab import runtime\nimport importlib\n"
        "importlib.import_module('vtalab.fpga.driver')\nfrom ..hw import ok\n"
        "from vtalab.util import fine\nfrom tests.rtl import helper\n")
    monkeypatch.setitem(globals(), "ROOT", tmp_path)
    found = violations("sim")
    assert [v.split(" imports ")[1] for v in found] == [
        "vtalab.compiler (compiler)", "vtalab.runtime (runtime)",
        "vtalab.fpga.driver (fpga)", "tests.rtl (tests)"]
