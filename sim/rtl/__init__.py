"""The native RTL backend's machinery: Verilator build with a C++ harness, cached by config
fingerprint and source hash (``build``), and the in-process model (``model``)."""
from .toolchain import RtlUnavailable, check_available

__all__ = ["RtlUnavailable", "check_available"]
