"""vtalab.compiler.exec: executable modules (accelerator programs + CPU kernels + schedule).

    from vtalab.compiler.exec import compile_model, save_module, load_module
    module = compile_model("model.onnx", "default", calibration=samples)
    outputs, profile = module.run(x)                 # backend="fsim" (default) or "rtl"
    print(profile.table())
    save_module(module, "model.vtl"); module = load_module("model.vtl")

Lowering (lower.py, templates.py): each accel_conv2d / accel_dense node becomes an
accelerator program (a `vtalab.runtime.Program`) through compiler/topi-style templates with the full requant epilogue
and automatically chosen knobs; every other node runs a CPU kernel (cpu_ops.py: LLVM
where compiler/cpu has the op, vectorised numpy otherwise). module.py builds the schedule
of steps over the memory plan; runner.py binds it to a Device and runs it; serialize.py
stores it in one file.
"""
from .cpu_ops import CpuKernel, cpu_kernel
from .lower import Unsupported, lower_accel
from .module import Module, Step, build_module, check_calibration, compile_model
from .profile import Profile, StepRecord
from .runner import Binding, run_module
from .serialize import ModuleFileError, load_module, save_module

__all__ = ["Binding", "CpuKernel", "Module", "Profile", "Step", "StepRecord",
           "Unsupported", "build_module", "check_calibration", "compile_model", "cpu_kernel",
           "load_module", "lower_accel", "ModuleFileError", "run_module", "save_module"]
