"""Running a module on a Device: bind once (DRAM placement, encoded programs), run steps.

Binding allocates the activation arena (the memory plan's offsets, then residual scratch
buffers), one DRAM buffer per accelerator constant, and per accelerator step its micro-op
image and its instruction stream with every relocation resolved. A run then copies the
input in, and walks the steps in order: accelerator steps run their instruction stream on
the device; CPU steps run their kernel on host arrays. A value crosses between host and
device DRAM only when a step on the other side reads it (CPU results an accelerator step
reads are written to their planned arena range just before it; accelerator results a CPU
step reads are copied out once).
"""
from __future__ import annotations

import time
from types import SimpleNamespace

import numpy as np

from vtalab.runtime import open_device
from vtalab.runtime.device import default_alignment
from vtalab.spec.errors import DeviceError

from ..graph.interp import check_feeds
from .cpu_ops import cpu_kernel
from .module import Module
from .profile import Profile, StepRecord


def _dram_need(module: Module) -> int:
    align = default_alignment(module.cfg)
    consts = sum(-(-a.nbytes // align) * align for a in module.consts.values())
    code = sum(s.kernel.dram_bytes() for s in module.steps if s.kernel is not None)
    return module.arena_bytes + consts + code + (1 << 20)


class Binding:
    """A module placed on one device (reusable across runs)."""

    def __init__(self, module: Module, device):
        if device.cfg.fingerprint() != module.cfg.fingerprint():
            raise DeviceError(f"device config must be the module's {module.cfg.name} "
                              f"({module.cfg.fingerprint()}), not {device.cfg.name} "
                              f"({device.cfg.fingerprint()})")
        self.module, self.device = module, device
        align = default_alignment(module.cfg)
        self.buffers = []
        self.arena = self._alloc(max(module.arena_bytes, 1), align)
        self.addr = {v: self.arena.addr + off for v, off in module.offsets.items()}
        used = {name for s in module.steps for kind, name in s.bindings.values()
                if kind == "const"}
        for name in sorted(used):
            array = np.ascontiguousarray(module.consts[name])
            buf = self._alloc(max(array.nbytes, 1), align)
            device.copy_in(buf, array.astype(array.dtype.newbyteorder("<")).view(np.uint8))
            self.addr[name] = buf.addr
        self.programs = {s.name: self._place(s) for s in module.steps
                         if s.kernel is not None}
        self.kernels = {}

    def _alloc(self, nbytes, align):
        buf = self.device.alloc(nbytes, align)
        self.buffers.append(buf)
        return buf

    def _place(self, step) -> tuple[int, int]:
        """The step's program placed with its parameters bound to arena/constant buffers
        (the runtime allocates its micro-op image and instruction stream)."""
        addrs = {param: self.addr[name] for param, (kind, name) in step.bindings.items()}
        _, insn_addr, owned = step.kernel.place(self.device, addrs)
        self.buffers.extend(owned.values())
        return insn_addr, len(step.kernel)

    def kernel(self, step):
        if step.name not in self.kernels:
            types = [self.module.types.get(v) if v in self.module.types else
                     _const_type(self.module.consts.get(v)) for v in step.inputs if v]
            from ..tune.apply import Recorded
            with Recorded(self.module.stats.get("tuning", {}).get("used", {})):
                self.kernels[step.name] = cpu_kernel(step.node, types,
                                                     exact=step.info.get("exact", False))
        return self.kernels[step.name]

    def release(self) -> None:
        for buf in reversed(self.buffers):
            self.device.free(buf)
        self.buffers = []


def _const_type(array):
    from ..graph.ir import type_of_array
    return None if array is None else type_of_array(np.asarray(array))


class _Values:
    """Where each value is: host arrays and/or the device arena."""

    def __init__(self, binding: Binding):
        self.b, self.host, self.on_device = binding, {}, set()
        self.moved = 0

    def get(self, value: str) -> np.ndarray:
        if value in self.host:
            return self.host[value]
        if value in self.b.module.consts:
            return self.b.module.consts[value]
        t = self.b.module.types[value]
        array = self.b.device.copy_out(self.b.arena, np.dtype(t.dtype), t.shape,
                                       self.b.module.offsets[value])
        self.moved += array.nbytes
        self.host[value] = array
        return array

    def put_device(self, value: str, array: np.ndarray | None = None) -> None:
        if value in self.on_device and array is None:
            return
        array = np.ascontiguousarray(self.host[value] if array is None else array)
        self.b.device.copy_in(self.b.arena, array.view(np.uint8).reshape(-1),
                              self.b.module.offsets[value])
        self.moved += array.nbytes
        self.on_device.add(value)


def run_module(module: Module, feeds, device=None, backend: str = "fsim", progress=None,
               keep: bool = False, step_done=None):
    """Run once; opens (and closes) a device of `backend` unless `device` is given.
    ``step_done(step, get)``, if given, is called after every step with a function that
    reads any value computed so far (the step's inputs and outputs included)."""
    if device is None:
        with open_device(backend, module.cfg, dram_bytes=_dram_need(module)) as dev:
            return run_module(module, feeds, dev, backend, progress, keep, step_done)
    binding = getattr(device, "_vtalab_binding", None)
    if binding is None or binding.module is not module:
        binding = Binding(module, device)
        device._vtalab_binding = binding
    return run_bound(binding, feeds, progress, keep, step_done)


def run_bound(binding: Binding, feeds, progress=None, keep: bool = False, step_done=None):
    module = binding.module
    signature = SimpleNamespace(inputs=module.inputs,
                                types={v: module.types[v] for v in module.inputs})
    values = _Values(binding)
    values.host.update(check_feeds(signature, feeds))
    profile = Profile(module.cfg, getattr(binding.device, "backend", "?"))
    last_use = {v: i for i, s in enumerate(module.steps) for v in s.inputs}
    start = time.perf_counter()
    for i, step in enumerate(module.steps):
        t0, moved0 = time.perf_counter(), values.moved
        if step.target == "accel":
            record = _run_accel(binding, step, values)
            if keep:  # copy out now: the arena range is reused later
                for v in step.outputs:
                    values.get(v)
        else:
            out = binding.kernel(step)(*[values.get(v) for v in step.inputs if v])
            values.host[step.outputs[0]] = out     # C-contiguous (CpuKernel)
            record = StepRecord(step.name, step.op, f"cpu/{binding.kernel(step).impl}",
                                step.info.get("macs", 0))
        record.seconds = time.perf_counter() - t0
        record.host_bytes = values.moved - moved0
        profile.add(record)
        if step_done:
            step_done(step, values.get)
        if not keep:
            for v in step.inputs:
                if last_use.get(v) == i and v not in module.outputs:
                    values.host.pop(v, None)
        if progress:
            progress(i + 1, len(module.steps), record)
    outputs = {v: np.array(values.get(v)) for v in module.outputs}
    profile.seconds = time.perf_counter() - start
    if keep:
        return {**values.host, **outputs}, profile
    return outputs, profile


def _run_accel(binding: Binding, step, values: _Values) -> StepRecord:
    if step.widen is not None:
        residual, scratch = step.widen
        values.put_device(scratch, values.get(residual).astype(np.int32))
    for param, (kind, name) in step.bindings.items():
        if kind == "value" and name not in step.outputs:
            values.put_device(name)
    addr, count = binding.programs[step.name]
    counters = binding.device.run(addr, count)
    for v in step.outputs:
        values.on_device.add(v)
        values.host.pop(v, None)
    return StepRecord(step.name, step.op, "accel", step.info.get("macs", 0),
                      counters=dict(counters), info=step.info)
