"""Errors of the FPGA flows and the board driver."""
from __future__ import annotations

from vtalab.spec.errors import VtaError


class FpgaError(VtaError, RuntimeError):
    """A board build or a board driver cannot do what was asked."""


class ResourceError(FpgaError):
    """A Config does not fit the part of the board it is built for."""
