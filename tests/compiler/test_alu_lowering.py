"""The ALU pattern matcher (compiler/vta/passes/alu.py) on one-operand accumulator kernels:
immediates on either side, subtraction and left shifts rewritten into the ALU's ops, each
result bit-exact on the functional simulator; what the ALU cannot do is refused with the
limit named (the shift and immediate ranges come from spec.isa), and so is a store that
does not narrow to out_bits."""
import numpy as np
import pytest

from vtalab.compiler import te
from vtalab.compiler.errors import LoweringError
from vtalab.compiler.vta import build
from vtalab.spec import preset
from vtalab.spec.isa import imm_range, shift_range

from .fsim import run_fsim

CFG = preset("tiny")


def unary_kernel(cfg, fn, blocks: int = 2, out_dtype: str = "int8"):
    """out = out_dtype(clip(fn(a), -128, 127)) with fn and the clip on the ALU."""
    shape = (blocks, cfg.batch, cfg.block_out)
    a = te.placeholder(shape, "int32", "a")
    res = te.compute(shape, lambda i, x, y: fn(a[i, x, y]), "res")
    clip = te.compute(shape, lambda *i: te.max(te.min(res(*i), 127), -128), "clip")
    out = te.compute(shape, lambda *i: clip(*i).astype(out_dtype), "out")
    s = te.create_schedule(out)
    a_buf = s.cache_read(a, "acc", [res])
    for stage in (res, clip):
        s[stage].set_scope("acc")
    io, ii = s[out].split(s[out].op.axes[0], 1)
    for stage in (a_buf, res, clip):
        s[stage].compute_at(s[out], io)
    s[a_buf].pragma(s[a_buf].op.axes[0], "dma_copy")
    for stage in (res, clip):
        s[stage].pragma(s[stage].op.axes[0], "alu")
    s[out].pragma(ii, "dma_copy")
    return s, [a, out]


def _alu_ops(prog) -> list[tuple[str, int]]:
    """(operation, immediate) of each distinct ALU instruction of the program."""
    found = []
    for line in prog.disasm():
        if line.startswith("ALU"):
            fields = dict(f.split("=") for f in line.split()[2:] if "=" in f)
            op = (line.split()[1], int(fields["imm"]))
            if op not in found:
                found.append(op)
    return found


@pytest.mark.parametrize("fn,first_op,expect", [
    (lambda v: v - 300, ("ADD", -300), lambda a: a - 300),        # sub imm -> add -imm
    (lambda v: 7 + v, ("ADD", 7), lambda a: a + 7),               # imm on the left
    (lambda v: v << 3, ("SHR", -3), lambda a: a << 3),            # shl -> shr by -amount
    (lambda v: te.max(v, 5), ("MAX", 5), lambda a: np.maximum(a, 5)),
])
def test_immediate_operations_lower_to_one_alu_op_each(fn, first_op, expect):
    s, args = unary_kernel(CFG, fn)
    prog = build(s, CFG, args)
    assert _alu_ops(prog)[0] == first_op
    a = np.arange(np.prod(args[0].shape), dtype=np.int32).reshape(args[0].shape) - 20
    out = run_fsim(prog, {"a": a})["out"]
    np.testing.assert_array_equal(out, np.clip(expect(a.astype(np.int64)), -128, 127))


def test_a_shift_past_the_alu_field_is_refused_naming_the_range():
    lo, hi = shift_range(CFG)
    s, args = unary_kernel(CFG, lambda v: v >> (hi + 1))
    with pytest.raises(LoweringError, match=f"shift amount must be in {lo}..{hi} "
                                            f"\\(acc_bits 32\\), not {hi + 1}"):
        build(s, CFG, args)


def test_an_immediate_past_the_alu_field_is_refused_naming_the_range():
    lo, hi = imm_range()
    s, args = unary_kernel(CFG, lambda v: v * (hi + 1))
    with pytest.raises(LoweringError, match=f"ALU immediate must be in {lo}..{hi} "
                                            f"\\(the ALU's signed immediate\\), not {hi + 1}"):
        build(s, CFG, args)


def test_an_operation_the_alu_lacks_is_refused():
    s, args = unary_kernel(CFG, lambda v: v // 3)
    with pytest.raises(LoweringError, match="must be add, sub, mul, min, max or a shift, "
                                            "not floordiv"):
        build(s, CFG, args)


def test_a_store_must_narrow_to_out_bits():
    s, args = unary_kernel(CFG, lambda v: v + 1, out_dtype="int16")
    with pytest.raises(LoweringError, match="store to out must write int8 \\(out_bits\\), "
                                            "not int16"):
        build(s, CFG, args)
