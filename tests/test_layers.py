"""Imports point one way (DESIGN.md "Layout"): spec <- hw <- sim <- runtime <- compiler,
fpga <- vtalab. A module may import its own layer and the layers below it, never above."""
import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
#: what each layer may import besides itself
ALLOWED = {
    "spec": set(),
    "hw": {"spec"},
    "sim": {"spec", "hw"},
    "runtime": {"spec", "hw", "sim"},
    "compiler": {"spec", "hw", "sim", "runtime"},
    "fpga": {"spec", "hw", "sim", "runtime"},
}
LAYERS = {"spec", "hw", "sim", "runtime", "compiler", "fpga", "vtalab"}


def _imported_layers(path: Path, layer: str) -> set:
    tree = ast.parse(path.read_text(), str(path))
    depth = len(path.relative_to(ROOT / layer).parts)     # package depth for relative imports
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                if node.level >= depth + 1:               # climbs out of the layer
                    found.add("<relative import out of the layer>")
                continue
            names = [node.module or ""]
        else:
            continue
        for name in names:
            parts = name.split(".")
            if parts[0] == "vtalab" and len(parts) > 1 and parts[1] in LAYERS:
                found.add(parts[1])
            elif parts[0] == "vtalab" and len(parts) == 1:
                found.add("vtalab")
    return found - {layer}


@pytest.mark.parametrize("layer", sorted(ALLOWED))
def test_imports_point_down(layer):
    bad = []
    for path in sorted((ROOT / layer).rglob("*.py")):
        extra = _imported_layers(path, layer) - ALLOWED[layer]
        if extra:
            bad.append(f"{path.relative_to(ROOT)} imports {sorted(extra)}")
    assert not bad, "imports must point down the layers, not:\n" + "\n".join(bad)
