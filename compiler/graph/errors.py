"""Errors of the graph level, rooted in spec.errors.VtaError.

Messages follow the project form "<thing> must be <expected>, not <actual>".
"""
from vtalab.spec.errors import VtaError


class GraphError(VtaError, ValueError):
    """A graph breaks an invariant: undefined value, wrong type, bad attribute."""


class ModelError(VtaError, ValueError):
    """A model file cannot be imported: corrupt, dynamic shapes, unsupported ops."""


class UnsupportedOpError(ModelError):
    """A model node uses an operator (or an attribute value) the importer does not cover."""


class QuantizeError(VtaError, ValueError):
    """A graph cannot be quantised as asked (bad calibration set, missing ranges)."""
