"""The pipeline register every exec-pipe stage builds: reset-less, loaded when enabled."""
from __future__ import annotations

from amaranth.hdl import Module, Signal


def enabled_register(m: Module, value, enable, name: str, shape=None) -> Signal:
    """A reset-less register of ``shape`` (default: ``value``'s) that loads ``value``
    when ``enable`` is high and holds otherwise."""
    reg = Signal(value.shape() if shape is None else shape, name=name, reset_less=True)
    with m.If(enable):
        m.d.sync += reg.eq(value)
    return reg
