"""A minimal CUDA driver-API launcher (ctypes on libcuda) for ``CudaModule``s.

    if cuda_available():
        run = CudaRunner(build_cuda(func, CudaTarget(90)))
        run(a, b, out)                  # copies in, launches every stage, copies out
        ms = run.time(a, b, out, repeat=20)

Only what the compiler needs: primary context of device 0, module load from PTX (driver
JIT) or cubin, device buffers, launches, events for timing.
"""
from __future__ import annotations

import ctypes
from functools import lru_cache

import numpy as np

from ..errors import CompileError


class CudaError(CompileError):
    """The CUDA driver refused a call (message names the call and the driver error)."""


CU_DEVICE_ATTRIBUTE_CC_MAJOR, CU_DEVICE_ATTRIBUTE_CC_MINOR = 75, 76


@lru_cache(maxsize=1)
def _lib():
    for name in ("libcuda.so.1", "libcuda.so", "nvcuda.dll"):
        try:
            return ctypes.CDLL(name)
        except OSError:
            continue
    return None


def _check(lib, rc: int, what: str) -> None:
    if rc != 0:
        msg = ctypes.c_char_p()
        lib.cuGetErrorString(rc, ctypes.byref(msg))
        text = msg.value.decode() if msg.value else f"error {rc}"
        raise CudaError(f"CUDA {what} must succeed, not fail with {text}")


@lru_cache(maxsize=1)
def _context():
    lib = _lib()
    if lib is None:
        raise CudaError("libcuda must be loadable to run CUDA kernels, not missing "
                        "(no NVIDIA driver on this machine)")
    _check(lib, lib.cuInit(0), "cuInit")
    dev, ctx = ctypes.c_int(), ctypes.c_void_p()
    _check(lib, lib.cuDeviceGet(ctypes.byref(dev), 0), "cuDeviceGet")
    _check(lib, lib.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev), "cuDevicePrimaryCtxRetain")
    _check(lib, lib.cuCtxSetCurrent(ctx), "cuCtxSetCurrent")
    return lib, dev, ctx


def cuda_available() -> bool:
    """Whether a CUDA device can be used (driver present, cuInit works, >= 1 device)."""
    lib = _lib()
    if lib is None or lib.cuInit(0) != 0:
        return False
    count = ctypes.c_int()
    return lib.cuDeviceGetCount(ctypes.byref(count)) == 0 and count.value > 0


def device_info() -> dict:
    lib, dev, _ = _context()
    name = ctypes.create_string_buffer(256)
    _check(lib, lib.cuDeviceGetName(name, 256, dev), "cuDeviceGetName")
    major, minor = ctypes.c_int(), ctypes.c_int()
    lib.cuDeviceGetAttribute(ctypes.byref(major), CU_DEVICE_ATTRIBUTE_CC_MAJOR, dev)
    lib.cuDeviceGetAttribute(ctypes.byref(minor), CU_DEVICE_ATTRIBUTE_CC_MINOR, dev)
    return {"name": name.value.decode(), "sm": major.value * 10 + minor.value}


class DeviceBuffer:
    def __init__(self, nbytes: int):
        self.lib = _context()[0]
        self.nbytes = max(int(nbytes), 1)
        self.ptr = ctypes.c_uint64()
        _check(self.lib, self.lib.cuMemAlloc_v2(ctypes.byref(self.ptr),
                                                ctypes.c_size_t(self.nbytes)), "cuMemAlloc")

    def upload(self, a: np.ndarray) -> None:
        _check(self.lib, self.lib.cuMemcpyHtoD_v2(self.ptr, ctypes.c_void_p(a.ctypes.data),
                                                  ctypes.c_size_t(a.nbytes)), "cuMemcpyHtoD")

    def download(self, a: np.ndarray) -> None:
        _check(self.lib, self.lib.cuMemcpyDtoH_v2(ctypes.c_void_p(a.ctypes.data), self.ptr,
                                                  ctypes.c_size_t(a.nbytes)), "cuMemcpyDtoH")

    def free(self) -> None:
        if self.ptr.value:
            self.lib.cuMemFree_v2(self.ptr)
            self.ptr = ctypes.c_uint64()


class CudaRunner:
    """Loads a CudaModule (PTX, or a cubin from ``ptxas``) and runs its kernels in order."""

    def __init__(self, module, cubin: bytes | None = None):
        self.lib = _context()[0]
        self.module = module
        image = cubin if cubin is not None else module.ptx.encode() + b"\0"
        self._image = ctypes.create_string_buffer(image, len(image))
        self._mod = ctypes.c_void_p()
        _check(self.lib, self.lib.cuModuleLoadData(ctypes.byref(self._mod), self._image),
               "cuModuleLoadData")
        self._fns = []
        for k in module.kernels:
            fn = ctypes.c_void_p()
            _check(self.lib, self.lib.cuModuleGetFunction(ctypes.byref(fn), self._mod,
                                                          k.symbol.encode()), "cuModuleGetFunction")
            self._fns.append((fn, k))
        self._work = [DeviceBuffer(b.size * b.dtype.numpy.itemsize) for b in module.workspaces]

    def _check_args(self, arrays):
        params = self.module.params
        if len(arrays) != len(params):
            raise CompileError(f"cuda kernel must get {len(params)} arrays, not {len(arrays)}")
        for b, a in zip(params, arrays):
            if a.shape != b.shape or a.dtype != b.dtype.numpy or not a.flags.c_contiguous:
                raise CompileError(f"argument {b.name} must be a C-contiguous "
                                   f"{b.dtype}{list(b.shape)}, not {a.dtype}{list(a.shape)}")

    def launch(self, device_buffers) -> None:
        ptrs = [ctypes.c_uint64(b.ptr.value) for b in list(device_buffers) + self._work]
        args = (ctypes.c_void_p * len(ptrs))(*[ctypes.cast(ctypes.byref(p), ctypes.c_void_p)
                                               for p in ptrs])
        for fn, k in self._fns:
            _check(self.lib, self.lib.cuLaunchKernel(fn, *[ctypes.c_uint(v) for v in k.grid],
                                                     *[ctypes.c_uint(v) for v in k.block],
                                                     ctypes.c_uint(0), None, args, None),
                   f"cuLaunchKernel({k.symbol})")

    def upload(self, arrays) -> list:
        self._check_args(arrays)
        bufs = [DeviceBuffer(a.nbytes) for a in arrays]
        for b, a in zip(bufs, arrays):
            b.upload(a)
        return bufs

    def __call__(self, *arrays) -> None:
        bufs = self.upload(arrays)
        try:
            self.launch(bufs)
            _check(self.lib, self.lib.cuCtxSynchronize(), "cuCtxSynchronize")
            outputs = self.module.outputs or self.module.params
            for b, a, param in zip(bufs, arrays, self.module.params):
                if param in outputs:
                    b.download(a)
        finally:
            for b in bufs:
                b.free()

    def time(self, *arrays, repeat: int = 20) -> float:
        """Mean milliseconds per run of all stages, data already on the device."""
        bufs = self.upload(arrays)
        start, end = ctypes.c_void_p(), ctypes.c_void_p()
        try:
            self.launch(bufs)
            _check(self.lib, self.lib.cuEventCreate(ctypes.byref(start), 0), "cuEventCreate")
            _check(self.lib, self.lib.cuEventCreate(ctypes.byref(end), 0), "cuEventCreate")
            self.lib.cuEventRecord(start, None)
            for _ in range(repeat):
                self.launch(bufs)
            self.lib.cuEventRecord(end, None)
            _check(self.lib, self.lib.cuEventSynchronize(end), "cuEventSynchronize")
            ms = ctypes.c_float()
            _check(self.lib, self.lib.cuEventElapsedTime(ctypes.byref(ms), start, end),
                   "cuEventElapsedTime")
            return ms.value / repeat
        finally:
            for ev in (start, end):
                if ev.value:
                    self.lib.cuEventDestroy_v2(ev)
            for b in bufs:
                b.free()
