"""Lowering of loop IR to VTA instruction streams: the accelerator half of the compiler."""
from .intrin import GemmIntrinsic, gemm_intrinsic, entry_shape
from .join import join_streams
from .pipeline import PASSES, build, build_with_stream, lower
from .program import Program, program_from_stream  # noqa: F401 (Program: the runtime's)
