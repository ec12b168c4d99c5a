"""Lowering of loop IR to VTA instruction streams: the accelerator half of the compiler."""
from .intrin import GemmIntrinsic, gemm_intrinsic, entry_shape
from .pipeline import PASSES, build, lower
from .program import Program, program_from_stream  # noqa: F401 (Program: the runtime's)
