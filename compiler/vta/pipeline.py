"""The accelerator lowering: ONE ordered list of named passes.

    schedule_ops      schedule -> loop IR (inlining, bound inference, loop nests)
    check_storage     every SRAM tile is whole entries and fits its buffer
    inject_dma        copy nests -> 2-D LOAD/STORE with zero padding
    tensorize_gemm    `tensorize` regions -> GEMM statements (intrinsic from the Config)
    overwrite_first   a reduction's reset pass -> its first step as GEMM_OVERWRITE (only
                      one-loop reductions with the option "reset_multi_loop")
    inplace_acc       elementwise acc stages reuse their input's storage
    match_alu         acc elementwise stores -> ALU operations (imm or acc operand)
    inject_vthread    virtual threads -> replicated buffers, interleaved statements
    allocate_sram     SRAM entry ranges; capacity errors name buffer and sizes
    fold_uops         GEMM/ALU blocks -> micro-op kernels with iter_out/iter_in loops
    codegen           unrolled instruction stream + micro-op DRAM image
    prefetch_uops     every micro-op kernel loaded at the start (one LOAD UOP where contiguous)
    stagger_epilogue  a thread's ALU epilogue and store move up beside its last GEMM; its
                      weight load before its input loads
    insert_deps       dependency tokens from load/compute/store hazards
    verify_tokens     token balance, deadlock freedom, no unordered conflicts

``lower(sch, cfg, dump_after="match_alu")`` prints the IR after that pass.
"""
from __future__ import annotations

import sys
from functools import partial

from vtalab.spec import Config

from ..errors import CompileError
from ..te.lower import schedule_to_func
from .passes.alu import inplace_acc, match_alu
from .passes.codegen import codegen
from .passes.deps import insert_deps
from .passes.fold_uops import fold_uops
from .passes.inject_dma import inject_dma
from .passes.overwrite import overwrite_first_step
from .passes.sram import allocate_sram
from .passes.stagger import stagger_epilogues
from .passes.uop_prefetch import prefetch_uops
from .passes.storage import check_storage
from .passes.tensorize import tensorize_gemm
from .passes.verify_tokens import verify_tokens
from .passes.vthread import inject_vthread
from .program import Program, program_from_stream
from .stream import Stream
from .verify import verify_ir

PASSES = [
    ("check_storage", check_storage),
    ("inject_dma", inject_dma),
    ("tensorize_gemm", tensorize_gemm),
    ("overwrite_first", overwrite_first_step),
    ("inplace_acc", inplace_acc),
    ("match_alu", match_alu),
    ("inject_vthread", inject_vthread),
    ("allocate_sram", allocate_sram),
    ("fold_uops", fold_uops),
    ("codegen", codegen),
    ("prefetch_uops", prefetch_uops),
    ("stagger_epilogue", stagger_epilogues),
    ("insert_deps", insert_deps),
    ("verify_tokens", verify_tokens),
]
PASS_NAMES = ["schedule_ops"] + [name for name, _ in PASSES]
#: variants of passes a caller asks for by name (``options``), each run instead of the pass
#: named with it
OPTIONAL_PASSES = {"reset_multi_loop": ("overwrite_first",
                                        partial(overwrite_first_step, multi_loop=False))}


def _pipeline(options) -> list:
    unknown = set(options) - set(OPTIONAL_PASSES)
    if unknown:
        raise CompileError(f"options must be among {sorted(OPTIONAL_PASSES)}, not "
                           f"{sorted(unknown)}")
    instead = {OPTIONAL_PASSES[opt][0]: (opt, OPTIONAL_PASSES[opt][1]) for opt in options}
    return [instead.get(name, (name, fn)) for name, fn in PASSES]


def lower(sch, cfg: Config, args=None, name: str = "main", dump_after=None, verify=True,
          stop_after=None, out=None, options=()):
    """Run the pipeline on a schedule; return the IR (or Stream) after ``stop_after``."""
    passes = _pipeline(options)
    names = ["schedule_ops"] + [n for n, _ in passes]
    ir_passes = names[:names.index("codegen")]
    dumps = _names(dump_after)
    for n in dumps | _names(stop_after):
        if n not in names:
            raise CompileError(f"pass must be one of {names}, not {n!r}")
    ir = schedule_to_func(sch, args, name)
    for pass_name, fn in [("schedule_ops", None)] + passes:
        if fn is not None:
            ir = fn(ir, cfg)
        if verify and pass_name in ir_passes:
            verify_ir(ir, pass_name, ir_passes)
        if pass_name in dumps:
            _dump(pass_name, ir, out or sys.stdout, cfg)
        if pass_name == stop_after:
            return ir
    return ir


def build(sch, cfg: Config, args=None, name: str = "main", dump_after=None,
          options=()) -> Program:
    """Compile a schedule to the runtime's accelerator Program."""
    return build_with_stream(sch, cfg, args, name, dump_after, options)[0]


def build_with_stream(sch, cfg: Config, args=None, name: str = "main", dump_after=None,
                      options=()) -> tuple[Program, Stream]:
    """The Program and the finished stream it was made from (for ``join_streams``)."""
    stream = lower(sch, cfg, args, name, dump_after, options=options)
    return program_from_stream(cfg, name, stream), stream


def _names(value) -> set:
    if value is None:
        return set()
    return {value} if isinstance(value, str) else set(value)


def _dump(pass_name, ir, out, cfg) -> None:
    print(f"// ---- IR after {pass_name} ----", file=out)
    if hasattr(ir, "records"):
        from vtalab.spec import Isa
        isa = Isa(cfg)
        for i, rec in enumerate(ir.records):
            print(f"{i:5d} {isa.disasm(rec.insn)}" + (f" @{rec.reloc}" if rec.reloc else ""),
                  file=out)
    else:
        print(ir, file=out)
