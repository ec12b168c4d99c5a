"""Maps the layer folders (spec/, hw/, sim/, ...) onto subpackages of ``vtalab``.

All metadata lives in pyproject.toml; this only lists the packages, walking each layer so
that nested packages (e.g. ``vtalab.compiler.ir``) are never forgotten.
"""
from pathlib import Path

from setuptools import setup

ROOT = Path(__file__).resolve().parent
LAYERS = {"vtalab": "vtalab", "vtalab.spec": "spec", "vtalab.hw": "hw", "vtalab.sim": "sim",
          "vtalab.runtime": "runtime", "vtalab.compiler": "compiler", "vtalab.fpga": "fpga"}


def packages_and_dirs():
    packages, dirs = [], {}
    for package, folder in LAYERS.items():
        for init in sorted((ROOT / folder).rglob("__init__.py")):
            rel = init.parent.relative_to(ROOT)
            name = ".".join([package, *rel.parts[1:]])
            packages.append(name)
            dirs[name] = str(rel).replace("\\", "/")
    return packages, dirs


PACKAGES, PACKAGE_DIR = packages_and_dirs()
setup(packages=PACKAGES, package_dir=PACKAGE_DIR)
