"""vtalab.compiler: tensor expressions, schedules, loop IR and the accelerator lowering.

    from vtalab.compiler import te, topi
    from vtalab.compiler.vta import build, lower, PASSES

Submodules load lazily so ``import vtalab.compiler`` stays light.
"""
import importlib

_SUBMODULES = ("te", "ir", "vta", "topi", "errors")


def __getattr__(name):
    if name in _SUBMODULES:
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(name)
