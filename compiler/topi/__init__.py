"""Operator templates for the accelerator: declaration + schedule + tunable knobs as data."""
from .common import Requant
from .dense import DenseKnobs, dense, dense_reference, dense_space
from .conv2d import (Conv2dKnobs, Conv2dShape, conv2d, conv2d_reference, conv2d_space,
                     default_conv2d_knobs, sram_use)
from .elementwise import ElementwiseKnobs, elementwise, elementwise_reference, elementwise_space
