"""The program builder: VTA's runtime API (2-D loads/stores, micro-kernels, GEMM/ALU pushes,
dependency tokens, synchronize) producing an instruction stream for one Config.

Modules and token queues follow VTA: the load module runs LOAD INP/WGT; the compute module
runs LOAD UOP/ACC, GEMM, ALU and FINISH; the store module runs STORE. ``dep_push(a, b)``
puts a token into queue a->b after the last instruction issued to ``a`` (flagging it, or
adding a no-op when it is already flagged or there is none); ``dep_pop(a, b)`` makes the
next instruction issued to ``b`` wait for one. Instruction bits are only ever produced by
``spec.isa``.
"""
from __future__ import annotations

import dataclasses

import numpy as np

from vtalab.spec import Config, Isa
from vtalab.spec.errors import ProgramError
from vtalab.spec.isa import (FLAG_QUEUES, MODULES, QUEUES, AluInsn, FinishInsn, GemmInsn,
                             Instruction, Mem, MemInsn, Opcode, module_of)

from .program import UOP_SYMBOL, Program
from .uop_kernel import KernelRecorder, UopCache, UopKernel

PADDED = (Mem.INP, Mem.ACC)


def noop(module: str, **flags) -> MemInsn:
    """An instruction that moves nothing on ``module`` and carries dependency flags."""
    if module == "store":
        return MemInsn(opcode=Opcode.STORE, mem=Mem.OUT, y_size=0, x_size=0, x_stride=0,
                       **flags)
    mem = Mem.INP if module == "load" else Mem.UOP
    return MemInsn(opcode=Opcode.LOAD, mem=mem, y_size=0, x_size=0, x_stride=0, **flags)


def _mem(value) -> Mem:
    try:
        return Mem[value.upper()] if isinstance(value, str) else Mem(value)
    except (KeyError, ValueError):
        raise ProgramError(f"memory type must be one of {[m.name.lower() for m in Mem]}, "
                           f"not {value!r}") from None


def _count(name: str, value, minimum: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise ProgramError(f"{name} must be an integer of at least {minimum}, not {value!r}")
    return int(value)


class ProgramBuilder:
    """Records one program at a time; ``finish()`` returns it, ``synchronize()`` runs it.

    Built from a Config, or from a Device (whose Config it uses and on which
    ``synchronize()`` runs by default).
    """

    def __init__(self, target):
        self.device = None if isinstance(target, Config) else target
        self.cfg: Config = target if isinstance(target, Config) else getattr(target, "cfg", None)
        if not isinstance(self.cfg, Config):
            raise ProgramError(f"target must be a Config or a Device, not {target!r}")
        self.isa = Isa(self.cfg)
        self._start()

    def _start(self) -> None:
        self.insns: list[Instruction] = []
        self._last = dict.fromkeys(MODULES)             # index of each module's last insn
        self._pending = {m: {"pop_prev": False, "pop_next": False} for m in MODULES}
        self.tokens = dict.fromkeys(QUEUES, 0)     # pushes minus pops, program order
        self._unsynced = {"load": False, "store": False}
        self._uop_chunks: list[np.ndarray] = []
        self._uop_words = 0
        self._uop_loads: list[int] = []
        self.uop_cache = UopCache(self.cfg.uop_depth)
        self.recorder: KernelRecorder | None = None

    # ---- emission -----------------------------------------------------------------------
    def push_insn(self, insn: Instruction) -> int:
        """Append ``insn`` to its module, adding the pops waiting for that module.

        Returns its index in the program. The instruction is encoded at once, so a field
        that does not fit raises IsaError here.
        """
        module = module_of(insn)
        pending = self._pending[module]
        flags = {name: True for name, wanted in pending.items() if wanted}
        if flags:
            insn = dataclasses.replace(insn, **flags)
            pending.update(pop_prev=False, pop_next=False)
        self.isa.encode(insn)
        self.insns.append(insn)
        self._last[module] = len(self.insns) - 1
        if module in self._unsynced:
            self._unsynced[module] = True
        return len(self.insns) - 1

    # ---- memory -------------------------------------------------------------------------
    def load_2d(self, mem, sram_index: int, dram, elem_offset: int, x_size: int,
                y_size: int = 1, x_stride: int | None = None, *, x_pad_before: int = 0,
                y_pad_before: int = 0, x_pad_after: int = 0, y_pad_after: int = 0) -> int:
        """VTALoadBuffer2D: a y_size x x_size tile of ``mem`` entries from ``dram``."""
        mem = _mem(mem)
        if mem == Mem.OUT:
            raise ProgramError("load memory type must be uop, wgt, inp or acc, not out")
        pads = dict(y_pad_0=y_pad_before, y_pad_1=y_pad_after,
                    x_pad_0=x_pad_before, x_pad_1=x_pad_after)
        if mem not in PADDED and any(pads.values()):
            raise ProgramError(f"pads must be 0 for a {mem.name.lower()} load (only inp and "
                               f"acc loads pad), not {pads}")
        rows = y_size + y_pad_before + y_pad_after
        cols = x_size + x_pad_before + x_pad_after
        insn = self._mem_insn(Opcode.LOAD, mem, sram_index, dram, elem_offset, x_size,
                              y_size, x_stride, rows * cols, pads)
        return self.push_insn(insn)

    def store_2d(self, sram_index: int, dram, elem_offset: int, x_size: int,
                 y_size: int = 1, x_stride: int | None = None, mem="out") -> int:
        """VTAStoreBuffer2D: out-buffer entries to a y_size x x_size tile in ``dram``."""
        if _mem(mem) != Mem.OUT:
            raise ProgramError(f"store memory type must be out, not {mem!r}")
        insn = self._mem_insn(Opcode.STORE, Mem.OUT, sram_index, dram, elem_offset, x_size,
                              y_size, x_stride, y_size * x_size, {})
        return self.push_insn(insn)

    def _mem_insn(self, opcode, mem, sram_index, dram, elem_offset, x_size, y_size, x_stride,
                  sram_entries, pads) -> MemInsn:
        buf = mem.name.lower()
        x_size, y_size = _count("x_size", x_size), _count("y_size", y_size)
        x_stride = x_size if x_stride is None else _count("x_stride", x_stride)
        if y_size > 1 and x_stride < x_size:
            raise ProgramError(f"x_stride must be at least x_size ({x_size}), not {x_stride}")
        sram_index = _count("sram_index", sram_index, 0)
        if sram_index + sram_entries > self.cfg.depth(buf):
            raise ProgramError(
                f"{buf} entries {sram_index}..{sram_index + sram_entries - 1} must lie inside "
                f"the {buf} buffer ({buf}_depth {self.cfg.depth(buf)})")
        extent = (y_size - 1) * x_stride + x_size
        dram_base = self._dram_base(buf, dram, _count("elem_offset", elem_offset, 0), extent)
        return MemInsn(opcode=opcode, mem=mem, sram_base=sram_index, dram_base=dram_base,
                       y_size=y_size, x_size=x_size, x_stride=x_stride, **pads)

    def _dram_base(self, buf: str, dram, elem_offset: int, extent: int) -> int:
        """DRAM address in ``buf`` entries; checks alignment and, for Buffers, the bounds."""
        entry = self.cfg.entry_bytes(buf)
        addr = getattr(dram, "addr", dram)
        if isinstance(addr, bool) or not isinstance(addr, (int, np.integer)) or addr < 0:
            raise ProgramError(f"dram must be a Buffer or a byte address, not {dram!r}")
        if addr % entry:
            raise ProgramError(f"dram address must be a multiple of the {buf} entry size "
                               f"({entry} bytes), not {addr:#x}")
        nbytes = getattr(dram, "nbytes", None)
        if nbytes is not None and (elem_offset + extent) * entry > nbytes:
            raise ProgramError(
                f"{buf} elements {elem_offset}..{elem_offset + extent - 1} must lie inside the "
                f"buffer of {nbytes // entry} {buf} elements ({nbytes} bytes)")
        return int(addr) // entry + elem_offset

    # ---- micro-kernels ------------------------------------------------------------------
    def uop_loop_begin(self, extent: int, dst_factor: int = 0, src_factor: int = 0,
                       wgt_factor: int = 0) -> None:
        """VTAUopLoopBegin: opens a kernel recording if none is open."""
        if self.recorder is None:
            self.recorder = KernelRecorder()
        self.recorder.loop_begin(extent, dst_factor, src_factor, wgt_factor)

    def uop_loop_end(self) -> None:
        if self.recorder is None:
            raise ProgramError("uop_loop_end must follow uop_loop_begin, not come alone")
        self.recorder.loop_end()

    def uop_push(self, dst: int, src: int, wgt: int = 0, **mode) -> None:
        """VTAUopPush: record one micro-op (mode=, reset=, overwrite=, alu_op=, use_imm=,
        imm=)."""
        if self.recorder is None:
            self.recorder = KernelRecorder()
        self.recorder.push(dst, src, wgt, **mode)

    def push_gemm(self, kernel: UopKernel | None = None) -> int:
        """VTAPushGEMMOp: run ``kernel`` (default: the one just recorded) as a GEMM."""
        kernel = self._take_kernel(kernel, "gemm")
        begin, end = self._place_kernel(kernel)
        insn = GemmInsn(reset=kernel.reset, overwrite=kernel.overwrite, uop_bgn=begin,
                        uop_end=end, **kernel.loop_fields())
        return self.push_insn(insn)

    def push_alu(self, kernel: UopKernel | None = None) -> int:
        """VTAPushALUOp: run ``kernel`` (default: the one just recorded) on the ALU."""
        kernel = self._take_kernel(kernel, "alu")
        begin, end = self._place_kernel(kernel)
        insn = AluInsn(uop_bgn=begin, uop_end=end, alu_op=kernel.alu_op,
                       use_imm=kernel.use_imm, imm=kernel.imm, **kernel.loop_fields())
        return self.push_insn(insn)

    def _take_kernel(self, kernel, mode: str) -> UopKernel:
        if kernel is None:
            if self.recorder is None:
                raise ProgramError(f"push_{mode} needs a kernel: pass one or record it with "
                                   f"uop_push first")
            kernel, self.recorder = self.recorder.finish(), None
        if not isinstance(kernel, UopKernel) or kernel.mode != mode:
            raise ProgramError(f"push_{mode} kernel must be a {mode} UopKernel, not {kernel!r}")
        return kernel

    def _place_kernel(self, kernel: UopKernel) -> tuple[int, int]:
        """Find or load the kernel's micro-ops in the uop SRAM; return (begin, end)."""
        words = kernel.words(self.isa)
        begin, end, hit = self.uop_cache.place(words)
        if not hit:
            load = MemInsn(opcode=Opcode.LOAD, mem=Mem.UOP, sram_base=begin,
                           dram_base=self._uop_words, y_size=1, x_size=len(words),
                           x_stride=len(words))
            self._uop_loads.append(self.push_insn(load))
            self._uop_chunks.append(words)
            self._uop_words += len(words)
        return begin, end

    # ---- dependency tokens --------------------------------------------------------------
    def dep_push(self, from_module: str, to_module: str) -> None:
        """VTADepPush: a token into queue from->to after from's last instruction."""
        queue = _queue(from_module, to_module)
        flag = _flag(from_module, "push", queue)
        self._commit_pops(from_module)
        last = self._last[from_module]
        if last is not None and not getattr(self.insns[last], flag):
            self.insns[last] = dataclasses.replace(self.insns[last], **{flag: True})
        else:
            self.push_insn(noop(from_module, **{flag: True}))
        self.tokens[queue] += 1
        if to_module == "compute" and from_module in self._unsynced:
            self._unsynced[from_module] = False

    def dep_pop(self, from_module: str, to_module: str) -> None:
        """VTADepPop: the next instruction issued to ``to_module`` waits for a token."""
        queue = _queue(from_module, to_module)
        flag = _flag(to_module, "pop", queue)
        if self._pending[to_module][flag]:
            self._commit_pops(to_module)
        self._pending[to_module][flag] = True
        self.tokens[queue] -= 1

    def _commit_pops(self, module: str) -> None:
        """Give pending pops of ``module`` their own no-op."""
        if any(self._pending[module].values()):
            self.push_insn(noop(module))

    # ---- finishing ----------------------------------------------------------------------
    def finish(self) -> Program:
        """Balance the tokens, append FINISH and return the program; start a new one."""
        if self.recorder is not None:
            raise ProgramError("a recorded kernel must be pushed with push_gemm/push_alu "
                               "before finish, not left pending")
        self._drain()
        self.push_insn(FinishInsn())
        uops = (np.concatenate(self._uop_chunks) if self._uop_chunks
                else np.zeros(0, dtype=np.uint32))
        program = Program.from_instructions(
            self.cfg, self.insns, uops, tuple((i, UOP_SYMBOL) for i in self._uop_loads),
            stats=self.uop_cache.stats())
        self._start()
        return program

    def _drain(self) -> None:
        for queue, count in self.tokens.items():
            if count < 0:
                raise ProgramError(f"tokens popped from queue {queue} must not outnumber "
                                   f"those pushed, not by {-count}")
        for module, queue in (("load", "c2l"), ("store", "c2s")):
            for _ in range(self.tokens[queue]):
                self.dep_pop("compute", module)
            self._commit_pops(module)
            if self._unsynced[module]:          # so FINISH comes after its last access
                self.dep_push(module, "compute")
        while self.tokens["l2c"] or self.tokens["s2c"]:
            if self.tokens["l2c"]:
                self.dep_pop("load", "compute")
            if self.tokens["s2c"]:
                self.dep_pop("store", "compute")

    def synchronize(self, device=None) -> dict:
        """VTASynchronize: finish the program, run it on ``device``, return the counters."""
        device = device if device is not None else self.device
        if device is None:
            raise ProgramError("synchronize needs a device: pass one or build from a Device")
        return self.finish().run(device)

    run = synchronize


def _queue(from_module: str, to_module: str) -> str:
    """The token queue from one module to another, named as spec.isa names it ("l2c")."""
    if from_module in MODULES and to_module in MODULES:
        name = f"{from_module[0]}2{to_module[0]}"
        if name in QUEUES:
            return name
    pairs = [f"{a}->{b}" for a in MODULES for b in MODULES if f"{a[0]}2{b[0]}" in QUEUES]
    raise ProgramError(f"token queue must be one of {pairs}, not {from_module!r}->{to_module!r}")


def _flag(module: str, kind: str, queue: str) -> str:
    """The dependency flag with which ``module`` pushes or pops ``queue``."""
    return next(flag for flag, name in FLAG_QUEUES[module].items()
                if name == queue and flag.startswith(kind))
