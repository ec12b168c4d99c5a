"""vtalab.runtime: the Device seam, its backends, and the program builder.

Backends load lazily: ``open_device("fsim", cfg)`` imports the functional simulator only
when asked for.
"""
from .alloc import DramAllocator, OutOfDeviceMemory
from .device import Buffer, Device, DeviceBase, backend_names, open_device, register_backend
from .program import Program
from .uop_kernel import KernelRecorder, Loop, UopCache, UopKernel
from .builder import ProgramBuilder, noop

__all__ = [
    "DramAllocator", "OutOfDeviceMemory", "Buffer", "Device", "DeviceBase", "backend_names",
    "open_device", "register_backend", "Program", "KernelRecorder", "Loop", "UopCache",
    "UopKernel", "ProgramBuilder", "noop",
]
