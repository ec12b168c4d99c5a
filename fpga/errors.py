"""Errors of the FPGA flows and the board driver."""
from __future__ import annotations

from vtalab.spec.errors import VtaError


class FpgaError(VtaError, RuntimeError):
    """A board build or a board driver cannot do what was asked."""


class ResourceError(FpgaError):
    """A Config does not fit the part of the board it is built for."""


class PlaceRouteError(FpgaError):
    """nextpnr failed on one placement (e.g. a route it cannot find from where it put a
    cell): another seed of the same netlist may succeed."""

    @property
    def reason(self) -> str:
        """nextpnr's ERROR line (else the message's first line)."""
        lines = str(self).splitlines()
        return next((line for line in lines if line.startswith("ERROR:")), lines[0])
