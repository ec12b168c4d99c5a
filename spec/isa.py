"""The one definition of vtalab's instruction set: 128-bit instructions, 32-bit micro-ops.

Field order, opcodes, memory ids and dependency flags are VTA's (``hw_spec.h``). Field
widths derive from the Config; fields are packed in order from bit 0 and a field that
would straddle a 64-bit word starts the next word (as VTA's C bitfields do), so at the
``default`` preset the encoding is bit-identical to VTA's. Every other module of vtalab
encodes, decodes and describes instruction bits through this file only.
"""
from __future__ import annotations

import dataclasses
import enum
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Union

from .errors import ConfigError, IsaError

if TYPE_CHECKING:
    from .config import Config

INSN_BITS = 128
INSN_BYTES = INSN_BITS // 8
UOP_BITS = 32
UOP_BYTES = UOP_BITS // 8
WORD_BITS = 64            # VTA's instruction is two uint64_t bitfield words
LOOP_ITER_BITS = 14       # VTA_LOOP_ITER_WIDTH
MEMOP_SRAM_BITS = 16      # VTA_MEMOP_SRAM_ADDR_BIT_WIDTH
MEMOP_DRAM_BITS = 32
MEMOP_SIZE_BITS = 16
MEMOP_STRIDE_BITS = 16
MEMOP_PAD_BITS = 4
ALU_OPCODE_BITS = 3
ALU_IMM_BITS = 16


def imm_range() -> tuple[int, int]:
    """(lowest, highest) value of the ALU's signed immediate."""
    half = 1 << (ALU_IMM_BITS - 1)
    return -half, half - 1


def shift_range(cfg: "Config") -> tuple[int, int]:
    """(lowest, highest) shift amount of SHR and SAT: the operand's low ``cfg.shift_bits``
    bits read as signed (a negative amount shifts left)."""
    half = 1 << (cfg.shift_bits - 1)
    return -half, half - 1


def wrap_signed(values, bits: int):
    """Integers (numpy int64 arrays or ints) reduced to signed ``bits``-bit two's
    complement, as the accumulator wraps (``bits`` = ``cfg.acc_bits``)."""
    half = 1 << (bits - 1)
    return ((values + half) & ((1 << bits) - 1)) - half


def alu_mul(cfg: "Config", a, b):
    """The ALU's MUL: the operands' low ``cfg.mul_bits`` bits read as signed, their product
    wrapped to acc_bits (numpy int64 arrays or ints holding acc-width values)."""
    bits = cfg.mul_bits
    return wrap_signed(wrap_signed(a, bits) * wrap_signed(b, bits), cfg.acc_bits)


class Opcode(enum.IntEnum):
    LOAD = 0
    STORE = 1
    GEMM = 2
    FINISH = 3
    ALU = 4
    #: not VTA's: a GEMM whose micro-ops write their products' sum instead of adding it to
    #: the acc row (a reduction's first step, no reset pass); VTA's GEMM layout has no free
    #: bit (VTA's own programs leave garbage in the one its bitfields skip), its opcode
    #: field has three unused values
    GEMM_OVERWRITE = 5


#: the opcodes of GEMM instructions and of every instruction that runs a micro-op loop
GEMM_OPCODES = (Opcode.GEMM, Opcode.GEMM_OVERWRITE)
LOOP_OPCODES = GEMM_OPCODES + (Opcode.ALU,)


class Mem(enum.IntEnum):
    UOP = 0
    WGT = 1
    INP = 2
    ACC = 3
    OUT = 4

    @property
    def buffer(self) -> str:
        return self.name.lower()


class AluOp(enum.IntEnum):
    """ALU opcodes. 0..3 are VTA's; MUL, MOV and SAT are vtalab's extensions (MOV has the
    number and meaning of the MOV that Intel's contributors added to VTA's HLS model)."""
    MIN = 0
    MAX = 1
    ADD = 2
    SHR = 3
    MUL = 4    # wrapping multiply by the operand
    MOV = 5    # dst = operand (the immediate or the src entry)
    SAT = 6    # requantise: dst = clip((dst [+ src]) >> shift, out range) (see sat_imm)


#: bit of a SAT immediate above the shift amount that raises the lower clip bound to 0
def sat_relu_bit(cfg: "Config") -> int:
    return cfg.shift_bits


def sat_imm(cfg: "Config", shift: int, relu: bool = False) -> int:
    """The immediate of a SAT micro-op: ``shift`` in the low shift_bits bits (signed, read
    like SHR's amount: negative shifts left) and the relu flag above it.

    SAT computes, per element, ``x = dst + acc[src]`` (``use_imm=0``) or ``x = dst``
    (``use_imm=1``), wrapping to acc_bits; then ``x >> shift`` as SHR does; then clips to
    the signed out_bits range, with a lower bound of 0 when the relu flag is set."""
    lo, hi = shift_range(cfg)
    if not lo <= shift <= hi:
        raise IsaError(f"SAT shift must be in {lo}..{hi} (acc_bits {cfg.acc_bits}), "
                       f"not {shift}")
    return (shift & ((1 << cfg.shift_bits) - 1)) | (int(bool(relu)) << sat_relu_bit(cfg))


def sat_fields(cfg: "Config", imm: int) -> tuple[int, bool]:
    """(shift, relu) of a SAT immediate (inverse of sat_imm; other bits are ignored)."""
    raw = imm & ((1 << cfg.shift_bits) - 1)
    shift = raw - (1 << cfg.shift_bits) if raw >> (cfg.shift_bits - 1) else raw
    return shift, bool((imm >> sat_relu_bit(cfg)) & 1)


@dataclass(frozen=True)
class Field:
    """One bit field: position, width, signedness, and what sets its width."""
    name: str
    lsb: int
    width: int
    signed: bool = False
    source: str = "ISA"

    @property
    def msb(self) -> int:
        return self.lsb + self.width - 1

    @property
    def mask(self) -> int:
        return (1 << self.width) - 1

    @property
    def min_value(self) -> int:
        return -(1 << (self.width - 1)) if self.signed else 0

    @property
    def max_value(self) -> int:
        return (1 << (self.width - 1)) - 1 if self.signed else self.mask

    def check(self, value: int, kind: str) -> int:
        if isinstance(value, bool):
            value = int(value)
        if not isinstance(value, int):
            try:
                value = int(value)
            except (TypeError, ValueError):
                raise IsaError(f"{kind} field {self.name} must be an integer, "
                               f"not {value!r}") from None
        if not self.min_value <= value <= self.max_value:
            sign = "signed " if self.signed else ""
            raise IsaError(f"{kind} field {self.name} must fit in {self.width} {sign}bits "
                           f"({self.source}: {self.min_value}..{self.max_value}), not {value}")
        return value

    def insert(self, value: int) -> int:
        return (value & self.mask) << self.lsb

    def extract(self, word: int) -> int:
        raw = (word >> self.lsb) & self.mask
        if self.signed and raw >> (self.width - 1):
            raw -= 1 << self.width
        return raw


class Layout:
    """An ordered set of fields packed into ``width`` bits."""

    def __init__(self, name: str, specs: list[tuple], width: int, param: str):
        self.name = name
        self.width = width
        fields, pos = [], 0
        for spec in specs:
            fname, fwidth = spec[0], spec[1]
            signed = len(spec) > 2 and spec[2]
            source = spec[3] if len(spec) > 3 else "ISA"
            if pos // WORD_BITS != (pos + fwidth - 1) // WORD_BITS:
                pos = (pos // WORD_BITS + 1) * WORD_BITS
            fields.append(Field(fname, pos, fwidth, signed, source))
            pos += fwidth
        if pos > width:
            raise ConfigError(f"{name} fields must fit in {width} bits, not {pos}: "
                              f"reduce {param}")
        self.fields = tuple(fields)
        self.used_bits = pos
        self._by_name = {f.name: f for f in fields}

    def __getitem__(self, name: str) -> Field:
        return self._by_name[name]

    def __contains__(self, name: str) -> bool:
        return name in self._by_name

    def __repr__(self):
        return f"Layout({self.name}, {[(f.name, f.lsb, f.width) for f in self.fields]})"

    def encode(self, values: dict) -> int:
        word = 0
        for fld in self.fields:
            word |= fld.insert(fld.check(values.get(fld.name, 0), self.name))
        return word

    def decode(self, word: int) -> dict:
        return {fld.name: fld.extract(word) for fld in self.fields}

    def with_field(self, word: int, name: str, value: int) -> int:
        """``word`` with field ``name`` set to ``value`` (checked as ``encode`` checks it):
        the encoder of one field, for relocations."""
        fld = self._by_name[name]
        return word & ~(fld.mask << fld.lsb) | fld.insert(fld.check(value, self.name))


# ---- instruction values ---------------------------------------------------------------

@dataclass(frozen=True, kw_only=True)
class Insn:
    """Fields every instruction has: the four dependency flags."""
    pop_prev: bool = False
    pop_next: bool = False
    push_prev: bool = False
    push_next: bool = False

    def with_deps(self, **flags) -> "Insn":
        return dataclasses.replace(self, **flags)


@dataclass(frozen=True, kw_only=True)
class MemInsn(Insn):
    opcode: Opcode = Opcode.LOAD
    mem: Mem = Mem.INP
    sram_base: int = 0
    dram_base: int = 0
    y_size: int = 1
    x_size: int = 1
    x_stride: int = 1
    y_pad_0: int = 0
    y_pad_1: int = 0
    x_pad_0: int = 0
    x_pad_1: int = 0


@dataclass(frozen=True, kw_only=True)
class _LoopInsn(Insn):
    reset: bool = False
    uop_bgn: int = 0
    uop_end: int = 1
    iter_out: int = 1
    iter_in: int = 1
    dst_factor_out: int = 0
    dst_factor_in: int = 0
    src_factor_out: int = 0
    src_factor_in: int = 0


@dataclass(frozen=True, kw_only=True)
class GemmInsn(_LoopInsn):
    wgt_factor_out: int = 0
    wgt_factor_in: int = 0
    #: encoded as opcode GEMM_OVERWRITE: each micro-op writes acc[dst] = inp x wgt (with
    #: ``reset`` as well, reset wins: zero)
    overwrite: bool = False


@dataclass(frozen=True, kw_only=True)
class AluInsn(_LoopInsn):
    alu_op: AluOp = AluOp.ADD
    use_imm: bool = False
    imm: int = 0


@dataclass(frozen=True, kw_only=True)
class FinishInsn(Insn):
    pass


@dataclass(frozen=True)
class Uop:
    dst: int
    src: int
    wgt: int = 0


Instruction = Union[MemInsn, GemmInsn, AluInsn, FinishInsn]

_DEP_FIELDS = ("pop_prev", "pop_next", "push_prev", "push_next")
_FIELD_ALIASES = {"mem": "memory_type", "alu_op": "alu_opcode"}


def _header() -> list[tuple]:
    return [("opcode", 3), ("pop_prev", 1), ("pop_next", 1), ("push_prev", 1), ("push_next", 1)]


class Isa:
    """Encoder, decoder and disassembler of one Config's instruction set."""

    def __new__(cls, cfg: "Config"):
        return _isa_for(cfg)

    def _build(self, cfg: "Config") -> None:
        self.cfg = cfg
        uop_bits = cfg.addr_bits("uop")
        acc_bits = cfg.addr_bits("acc")
        src_bits = max(cfg.addr_bits("inp"), acc_bits)
        wgt_bits = cfg.addr_bits("wgt")
        src_source = f"max of inp_depth {cfg.inp_depth} and acc_depth {cfg.acc_depth}"
        loop = [
            ("reset", 1),
            ("uop_bgn", uop_bits, False, f"uop_depth {cfg.uop_depth}"),
            ("uop_end", uop_bits + 1, False, f"uop_depth {cfg.uop_depth} + 1"),
            ("iter_out", LOOP_ITER_BITS), ("iter_in", LOOP_ITER_BITS),
            ("dst_factor_out", acc_bits, False, f"acc_depth {cfg.acc_depth}"),
            ("dst_factor_in", acc_bits, False, f"acc_depth {cfg.acc_depth}"),
            ("src_factor_out", src_bits, False, src_source),
            ("src_factor_in", src_bits, False, src_source),
        ]
        depths = "uop/acc/inp/wgt depths"
        self.mem = Layout("LOAD/STORE", _header() + [
            ("memory_type", 3), ("sram_base", MEMOP_SRAM_BITS), ("dram_base", MEMOP_DRAM_BITS),
            ("y_size", MEMOP_SIZE_BITS), ("x_size", MEMOP_SIZE_BITS),
            ("x_stride", MEMOP_STRIDE_BITS), ("y_pad_0", MEMOP_PAD_BITS),
            ("y_pad_1", MEMOP_PAD_BITS), ("x_pad_0", MEMOP_PAD_BITS), ("x_pad_1", MEMOP_PAD_BITS),
        ], INSN_BITS, "nothing (fixed layout)")
        self.gemm = Layout("GEMM", _header() + loop + [
            ("wgt_factor_out", wgt_bits, False, f"wgt_depth {cfg.wgt_depth}"),
            ("wgt_factor_in", wgt_bits, False, f"wgt_depth {cfg.wgt_depth}"),
        ], INSN_BITS, depths)
        self.alu = Layout("ALU", _header() + loop + [
            ("alu_opcode", ALU_OPCODE_BITS), ("use_imm", 1), ("imm", ALU_IMM_BITS, True),
        ], INSN_BITS, depths)
        self.finish = Layout("FINISH", _header(), INSN_BITS, "nothing")
        self.uop = Layout("uop", [
            ("dst", acc_bits, False, f"acc_depth {cfg.acc_depth}"),
            ("src", src_bits, False, src_source),
            ("wgt", wgt_bits, False, f"wgt_depth {cfg.wgt_depth}"),
        ], UOP_BITS, "acc/inp/wgt depths")
        self.opcode_field = self.mem["opcode"]

    # ---- instructions -------------------------------------------------------------------
    def layout_of(self, insn: Instruction) -> Layout:
        if isinstance(insn, MemInsn):
            return self.mem
        if isinstance(insn, GemmInsn):
            return self.gemm
        if isinstance(insn, AluInsn):
            return self.alu
        if isinstance(insn, FinishInsn):
            return self.finish
        raise IsaError(f"instruction must be a MemInsn, GemmInsn, AluInsn or FinishInsn, "
                       f"not {type(insn).__name__}")

    def encode(self, insn: Instruction) -> int:
        layout = self.layout_of(insn)
        values = {_FIELD_ALIASES.get(k, k): v for k, v in _fields(insn).items()}
        if isinstance(insn, MemInsn):
            if insn.opcode not in (Opcode.LOAD, Opcode.STORE):
                raise IsaError(f"MemInsn opcode must be LOAD or STORE, not {insn.opcode!r}")
            values["memory_type"] = Mem(insn.mem)
        else:
            values["opcode"] = {GemmInsn: Opcode.GEMM, AluInsn: Opcode.ALU,
                                FinishInsn: Opcode.FINISH}[type(insn)]
            if values.pop("overwrite", False):
                values["opcode"] = Opcode.GEMM_OVERWRITE
        if isinstance(insn, AluInsn):
            values["alu_opcode"] = AluOp(insn.alu_op)
        return layout.encode(values)

    def decode(self, word: int) -> Instruction:
        if not 0 <= word < 1 << INSN_BITS:
            raise IsaError(f"instruction word must fit in {INSN_BITS} bits, not {word:#x}")
        opcode = self.opcode_field.extract(word)
        try:
            opcode = Opcode(opcode)
        except ValueError:
            raise IsaError(f"opcode must be one of {[o.value for o in Opcode]}, "
                           f"not {opcode}") from None
        if opcode in (Opcode.LOAD, Opcode.STORE):
            raw = self.mem.decode(word)
            try:
                mem = Mem(raw.pop("memory_type"))
            except ValueError as exc:
                raise IsaError(f"memory_type must be one of {[m.value for m in Mem]}, "
                               f"not {exc.args[0].split()[0]}") from None
            raw["opcode"] = Opcode(raw["opcode"])
            return MemInsn(mem=mem, **_bools(raw))
        if opcode in GEMM_OPCODES:
            raw = self.gemm.decode(word)
            raw.pop("opcode")
            return GemmInsn(overwrite=opcode == Opcode.GEMM_OVERWRITE, **_bools(raw))
        if opcode == Opcode.ALU:
            raw = self.alu.decode(word)
            raw.pop("opcode")
            try:
                op = AluOp(raw.pop("alu_opcode"))
            except ValueError as exc:
                raise IsaError(f"alu_opcode must be one of {[a.value for a in AluOp]}, "
                               f"not {exc.args[0].split()[0]}") from None
            return AluInsn(alu_op=op, **_bools(raw))
        raw = self.finish.decode(word)
        raw.pop("opcode")
        return FinishInsn(**_bools(raw))

    def encode_program(self, insns: "list[Instruction]") -> bytes:
        return b"".join(self.encode(i).to_bytes(INSN_BYTES, "little") for i in insns)

    def decode_program(self, data: bytes) -> "list[Instruction]":
        if len(data) % INSN_BYTES:
            raise IsaError(f"instruction stream length must be a multiple of {INSN_BYTES} "
                           f"bytes, not {len(data)}")
        return [self.decode(int.from_bytes(data[i:i + INSN_BYTES], "little"))
                for i in range(0, len(data), INSN_BYTES)]

    # ---- micro-ops -----------------------------------------------------------------------
    def encode_uop(self, uop: Uop) -> int:
        return self.uop.encode({"dst": uop.dst, "src": uop.src, "wgt": uop.wgt})

    def decode_uop(self, word: int) -> Uop:
        return Uop(**self.uop.decode(word))

    def encode_uops(self, dst, src, wgt):
        """Vectorised encoder: integer arrays in, uint32 words out (range-checked)."""
        import numpy as np
        word = np.zeros(np.broadcast(dst, src, wgt).shape, dtype=np.uint32)
        for name, values in (("dst", dst), ("src", src), ("wgt", wgt)):
            fld = self.uop[name]
            values = np.asarray(values, dtype=np.int64)
            if values.size and (values.min() < 0 or values.max() > fld.max_value):
                bad = values[(values < 0) | (values > fld.max_value)].flat[0]
                fld.check(int(bad), "uop")
            word |= (values.astype(np.uint32) & np.uint32(fld.mask)) << np.uint32(fld.lsb)
        return word

    def decode_uops(self, words):
        """Vectorised decoder: uint32 array in, (dst, src, wgt) int64 arrays out."""
        import numpy as np
        words = np.asarray(words, dtype=np.uint32).astype(np.int64)
        return tuple((words >> self.uop[n].lsb) & self.uop[n].mask for n in ("dst", "src", "wgt"))

    # ---- text ----------------------------------------------------------------------------
    def disasm(self, insn: "Instruction | int") -> str:
        """One line naming the instruction and every field's value in decimal."""
        if isinstance(insn, int):
            insn = self.decode(insn)
        values = _fields(insn)
        if isinstance(insn, MemInsn):
            head = f"{insn.opcode.name:<6} {insn.mem.name:<3}"
            values.pop("opcode")
            values["mem"] = int(insn.mem)
        elif isinstance(insn, AluInsn):
            head = f"ALU    {insn.alu_op.name:<3}"
            values["alu_op"] = int(insn.alu_op)
            if insn.alu_op == AluOp.SAT:
                shift, relu = sat_fields(self.cfg, insn.imm)
                values["sat"] = f"shr{shift}{'+relu' if relu else ''}"
        elif isinstance(insn, GemmInsn):
            head = f"{'GEMM_OVERWRITE' if values.pop('overwrite') else 'GEMM':<10}"
        else:
            head = f"{type(insn).__name__[:-4].upper():<10}"
        parts = [f"{k}={v if isinstance(v, str) else int(v)}" for k, v in values.items()]
        return f"{head} " + " ".join(parts)


def _fields(insn: Instruction) -> dict:
    """Field values of an instruction (a shallow, fast ``dataclasses.asdict``)."""
    return {f.name: getattr(insn, f.name) for f in dataclasses.fields(insn)}


def _bools(raw: dict) -> dict:
    for name in _DEP_FIELDS + ("reset", "use_imm"):
        if name in raw:
            raw[name] = bool(raw[name])
    return raw


@lru_cache(maxsize=64)
def _isa_for(cfg: "Config") -> Isa:
    isa = object.__new__(Isa)
    isa._build(cfg)
    return isa


def check_config_fits(cfg: "Config") -> None:
    """Raise ConfigError if this Config's fields cannot fit the 128-bit instruction."""
    Isa(cfg)


# ---- which module runs an instruction, and which queues its flags name ----------------

MODULES = ("load", "compute", "store")
QUEUES = ("l2c", "c2l", "c2s", "s2c")
#: tokens a hardware queue holds (hw/token_queue.py)
TOKEN_QUEUE_DEPTH = 256
#: tokens a legal program may have outstanding in one queue in program order. The modules
#: may run ahead of program order only by the instructions the fetch unit has dispatched
#: (a few queue entries), so a queue never holds more than about this many plus those.
MAX_TOKENS = TOKEN_QUEUE_DEPTH // 2
# For each module: the queue each dependency flag pops or pushes (VTA: prev/next stage).
FLAG_QUEUES = {
    "load": {"pop_next": "c2l", "push_next": "l2c"},
    "compute": {"pop_prev": "l2c", "pop_next": "s2c", "push_prev": "c2l", "push_next": "c2s"},
    "store": {"pop_prev": "c2s", "push_prev": "s2c"},
}


def module_of(insn: Instruction) -> str:
    """The module the fetch unit dispatches ``insn`` to."""
    if isinstance(insn, MemInsn):
        if insn.opcode == Opcode.STORE:
            return "store"
        return "load" if insn.mem in (Mem.INP, Mem.WGT) else "compute"
    return "compute"
