"""The CPU fallback's numpy kernels now live with the op table (compiler/graph/kernels_cpu.py);
this module re-exports them for older imports (e.g. compiler/tune/templates/cpu.py)."""
from ..graph.kernels_cpu import *  # noqa: F401,F403
from ..graph.kernels_cpu import __all__  # noqa: F401
