"""Operator templates for the accelerator: declaration + schedule + tunable knobs as data."""
from .common import Requant
from .dense import DenseKnobs, dense, dense_reference, dense_space
