"""A board's package pins as amaranth-boards declares them: a source independent of the
board facts the generators use (fpga/soc_facts.py), to check the pins a project places.
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass

from vtalab.fpga.errors import FpgaError


@dataclass(frozen=True)
class BoardPin:
    site: str                       # package pin, e.g. "R14"
    where: str                      # "led 0", "clk50 0", "connector gpio 0 pin 7"
    io_standard: "str | None"       # the resource's IOSTANDARD / io_standard attribute
    clock_hz: "float | None"        # the oscillator's frequency on a clock resource


def board_pins(platform: str) -> dict:
    """site -> BoardPin for the amaranth-boards platform ``"module:Class"``."""
    module, _, name = platform.partition(":")
    try:
        cls = getattr(importlib.import_module(module), name)
    except ImportError as exc:
        raise FpgaError(f"amaranth-boards must be installed to check a project's pins "
                        f"(pip install 'vtalab[fpga]'), not missing: {exc}") from None
    instance = cls()
    pins = {}
    for resource in instance.resources.values():
        where = f"{resource.name} {resource.number}"
        clock = resource.clock.frequency if resource.clock is not None else None
        _collect(resource.ios, where, _standard(resource.attrs), clock, pins)
    for connector in instance.connectors.values():
        for number, site in connector.mapping.items():
            pins.setdefault(site, BoardPin(site, f"connector {connector.name} "
                                                 f"{connector.number} pin {number}", None, None))
    return pins


def _standard(attrs) -> "str | None":
    for key in ("IOSTANDARD", "io_standard"):
        if key in attrs:
            return attrs[key]
    return None


def _collect(ios, where: str, standard, clock, pins: dict) -> None:
    for io in ios:
        if hasattr(io, "ios"):                       # a Subsignal
            _collect(io.ios, f"{where} {io.name}", _standard(io.attrs) or standard, clock,
                     pins)
        elif hasattr(io, "p"):                       # DiffPairs
            for site in (*io.p.names, *io.n.names):
                pins[site] = BoardPin(site, where, standard, clock)
        elif hasattr(io, "names"):                   # Pins
            for site in io.names:
                pins[site] = BoardPin(site, where, standard, clock)
