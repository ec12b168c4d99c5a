"""llvmlite 0.50 plumbing: targets, the new pass manager, object emission, MCJIT loading.

``llvm.initialize()`` raises in llvmlite 0.50 and the legacy pass manager is gone: targets
are initialised one by one and modules are optimised with ``create_pass_builder``.
"""
from __future__ import annotations

import threading

import llvmlite.binding as llvm

from ..errors import CompileError

_lock = threading.Lock()
_ready = {"native": False, "all": False}


def init_native() -> None:
    with _lock:
        if not _ready["native"]:
            llvm.initialize_native_target()
            llvm.initialize_native_asmprinter()
            _ready["native"] = True


def init_all() -> None:
    init_native()
    with _lock:
        if not _ready["all"]:
            llvm.initialize_all_targets()
            llvm.initialize_all_asmprinters()
            _ready["all"] = True


def host_cpu() -> tuple[str, str, str]:
    """(triple, cpu name, feature string) of this machine."""
    init_native()
    return llvm.get_process_triple(), llvm.get_host_cpu_name(), \
        llvm.get_host_cpu_features().flatten()


def target_machine(triple: str, cpu: str = "", features: str = "", opt: int = 3,
                   reloc: str = "default", codemodel: str = "jitdefault"):
    if triple.startswith("nvptx"):
        init_all()
    else:
        init_native()
    try:
        target = llvm.Target.from_triple(triple)
    except RuntimeError as exc:
        raise CompileError(f"LLVM target must be available in llvmlite, not {triple!r} "
                           f"({exc})") from None
    return target.create_target_machine(cpu=cpu, features=features, opt=opt, reloc=reloc,
                                        codemodel=codemodel)


def parse(ir_text: str):
    """A verified llvmlite ModuleRef from IR text."""
    try:
        mod = llvm.parse_assembly(ir_text)
        mod.verify()
    except RuntimeError as exc:
        raise CompileError(f"generated LLVM IR must verify, not fail with: {exc}") from None
    return mod


def optimize(mod, tm, level: int = 3) -> None:
    """Run the O``level`` pipeline with loop and SLP vectorisation on ``mod`` in place."""
    pto = llvm.create_pipeline_tuning_options(speed_level=level)
    pto.loop_vectorization = True
    pto.slp_vectorization = True
    pto.loop_unrolling = True
    pb = llvm.create_pass_builder(tm, pto)
    pb.getModulePassManager().run(mod, pb)


def compile_object(ir_text: str, tm, level: int = 3) -> bytes:
    """Optimised native object code for ``ir_text``."""
    mod = parse(ir_text)
    mod.triple = tm.triple
    mod.data_layout = str(tm.target_data)
    optimize(mod, tm, level)
    return tm.emit_object(mod)


def optimized_ir(ir_text: str, tm, level: int = 3) -> str:
    mod = parse(ir_text)
    optimize(mod, tm, level)
    return str(mod)


class LoadedObject:
    """An object file linked into the process by MCJIT; symbols -> addresses."""

    def __init__(self, obj: bytes, tm):
        init_native()
        empty = llvm.parse_assembly("")
        empty.triple = tm.triple
        self.engine = llvm.create_mcjit_compiler(empty, tm)
        self.engine.add_object_file(llvm.ObjectFileRef.from_data(obj))
        self.engine.finalize_object()

    def address(self, symbol: str) -> int:
        addr = self.engine.get_function_address(symbol)
        if not addr:
            raise CompileError(f"symbol {symbol} must be defined by the compiled object, "
                               f"not missing")
        return addr
