"""Errors of the compiler, rooted in spec.errors.VtaError.

Messages follow the project form "<thing> must be <expected>, not <actual>".
"""
from vtalab.spec.errors import VtaError


class CompileError(VtaError, ValueError):
    """A compute declaration, schedule or lowering step cannot be compiled."""


class ShapeError(CompileError):
    """A tensor is indexed or declared with an impossible shape."""


class ScheduleError(CompileError):
    """A schedule primitive was used on the wrong axis, stage or tensor."""


class LoweringError(CompileError):
    """A pass met IR it cannot lower (an unmatched pattern, an unsupported access)."""


class SramCapacityError(CompileError):
    """A tile does not fit an on-chip SRAM buffer."""


class VerifyError(CompileError):
    """The IR between two passes, or a token stream, breaks an invariant."""
