"""VTA's instruction-level test set (TVM's vta/tests/python/unittest/test_vta_insn.py),
built with the runtime's program builder, run on a device and compared bit-exactly with
numpy references written independently of the simulator."""
import numpy as np
import pytest

from vtalab.runtime import Loop, ProgramBuilder, UopKernel
from vtalab.spec.isa import AluOp

from .helpers import (acc_entries, alu_rows, identity_gemm, identity_weights, narrow,
                      out_buffer, read_out, store_rows, upload, wrap)

INT32_MIN, INT32_MAX = -(1 << 31), (1 << 31) - 1


def check_acc_sram(dev, rows: slice, expected) -> None:
    """The accumulator's contents, where the backend shows them (fsim only)."""
    if getattr(dev, "sim", None) is not None:
        np.testing.assert_array_equal(dev.sim.sram.acc[rows], expected)


def test_save_load_out(cfg, dev, rng):
    n = 4
    rows = n * n
    x = acc_entries(cfg, rows, INT32_MIN, INT32_MAX, rng)
    x_buf, y_buf = upload(dev, x), out_buffer(dev, cfg, rows)
    b = ProgramBuilder(dev)
    b.load_2d("acc", 0, x_buf, 0, rows)
    alu_rows(b, AluOp.SHR, n, n, imm=0)            # pass-through: writes the out buffer
    store_rows(b, y_buf, rows)
    counters = b.synchronize()
    np.testing.assert_array_equal(read_out(dev, cfg, y_buf, rows), narrow(cfg, x))
    check_acc_sram(dev, slice(0, rows), x)
    assert counters["bytes_acc"] == rows * cfg.entry_bytes("acc")
    assert counters["bytes_out"] == rows * cfg.entry_bytes("out")
    assert counters["alu_uops"] == rows


PADS = {  # (y_before, y_after, x_before, x_after), as TVM's check_padded_load cases
    "Y0": (2, 0, 0, 0), "Y1": (0, 2, 0, 0), "X0": (0, 0, 2, 0), "X1": (0, 0, 0, 2),
    "all": (1, 1, 1, 1),
}


def _pad_kwargs(pads):
    y0, y1, x0, x1 = pads
    return dict(y_pad_before=y0, y_pad_after=y1, x_pad_before=x0, x_pad_after=x1)


def _padded(x, pads):
    y0, y1, x0, x1 = pads
    return np.pad(x, ((y0, y1), (x0, x1)) + ((0, 0),) * (x.ndim - 2))


@pytest.mark.parametrize("pads", PADS.values(), ids=PADS.keys())
def test_padded_load_acc(cfg, dev, rng, pads):
    n, m = 3, 5
    x = acc_entries(cfg, n * m, -1000, 1000, rng).reshape(n, m, cfg.batch, cfg.block_out)
    expected = _padded(x, pads)
    rows, cols = expected.shape[:2]
    garbage = upload(dev, acc_entries(cfg, rows * cols, 1, 100, rng))
    x_buf, y_buf = upload(dev, x), out_buffer(dev, cfg, rows * cols)
    b = ProgramBuilder(dev)
    b.load_2d("acc", 0, garbage, 0, rows * cols)   # pads must overwrite this with zeros
    b.load_2d("acc", 0, x_buf, 0, m, n, m, **_pad_kwargs(pads))
    alu_rows(b, AluOp.SHR, rows, cols, imm=0)
    store_rows(b, y_buf, rows * cols)
    b.synchronize()
    got = read_out(dev, cfg, y_buf, rows * cols).reshape(expected.shape)
    np.testing.assert_array_equal(got, narrow(cfg, expected))


@pytest.mark.parametrize("pads", PADS.values(), ids=PADS.keys())
def test_padded_load_inp(cfg, dev, rng, pads):
    n, m = 3, 5
    inp_type = f"int{cfg.inp_bits}"
    x = rng.integers(-128, 128, size=(n, m, cfg.batch, cfg.block_in)).astype(inp_type)
    expected = _padded(x, pads)[..., :cfg.block_out]   # identity weights pick block_out lanes
    rows, cols = expected.shape[:2]
    garbage = upload(dev, rng.integers(1, 100, size=(rows * cols,) + x.shape[2:]).astype(inp_type))
    x_buf, w_buf = upload(dev, x), upload(dev, identity_weights(cfg))
    y_buf = out_buffer(dev, cfg, rows * cols)
    b = ProgramBuilder(dev)
    b.load_2d("inp", 0, garbage, 0, rows * cols)
    b.load_2d("inp", 0, x_buf, 0, m, n, m, **_pad_kwargs(pads))
    b.load_2d("wgt", 0, w_buf, 0, 1)
    b.dep_push("load", "compute")
    b.dep_pop("load", "compute")
    identity_gemm(b, rows * cols)
    store_rows(b, y_buf, rows * cols)
    b.synchronize()
    got = read_out(dev, cfg, y_buf, rows * cols).reshape(expected.shape)
    np.testing.assert_array_equal(got, expected.astype(got.dtype))


# ---- GEMM with requantisation --------------------------------------------------------------

SHIFT = 8


def _gemm_operands(cfg, rng):
    nb, ko = 4, 4                                      # batch blocks, reduction blocks
    channel = ko * cfg.block_in
    co = channel // cfg.block_out
    data = rng.integers(-128, 128, size=(nb, ko, cfg.batch, cfg.block_in)).astype(np.int8)
    weight = rng.integers(-128, 128, size=(co, ko, cfg.block_out, cfg.block_in)).astype(np.int8)
    sums = np.einsum("pkbi,ckoi->pcbo", data.astype(np.int64), weight.astype(np.int64))
    expected = np.clip(wrap(sums, cfg.acc_bits) >> SHIFT, 0, (1 << (cfg.inp_bits - 1)) - 1)
    return data, weight, expected.astype(np.int8)


def _requantise(b, cfg, acc_base: int, rows: int) -> None:
    alu_rows(b, AluOp.SHR, 1, rows, imm=SHIFT, dst_base=acc_base)
    alu_rows(b, AluOp.MAX, 1, rows, imm=0, dst_base=acc_base)
    alu_rows(b, AluOp.MIN, 1, rows, imm=(1 << (cfg.inp_bits - 1)) - 1, dst_base=acc_base)


def _gemm_tile(b, nb, co, ko, acc_base=0, inp_base=0, wgt_base=0) -> None:
    """acc[p*co + c] = sum_k inp[p*ko + k] x wgt[c*ko + k]^T for an nb x co tile."""
    loops = [Loop(nb, co, ko, 0), Loop(co, 1, 0, ko)]
    b.push_gemm(UopKernel.gemm([(acc_base, 0, 0)], loops, reset=True))
    uops = [(acc_base, inp_base + k, wgt_base + k) for k in range(ko)]
    b.push_gemm(UopKernel.gemm(uops, loops))


def test_gemm_requantised(cfg, dev, rng):
    data, weight, expected = _gemm_operands(cfg, rng)
    nb, ko, co = data.shape[0], data.shape[1], weight.shape[0]
    d_buf, w_buf = upload(dev, data), upload(dev, weight)
    y_buf = out_buffer(dev, cfg, nb * co)
    b = ProgramBuilder(dev)
    b.load_2d("inp", 0, d_buf, 0, nb * ko)
    b.load_2d("wgt", 0, w_buf, 0, co * ko)
    b.dep_push("load", "compute")
    b.dep_pop("load", "compute")
    _gemm_tile(b, nb, co, ko)
    _requantise(b, cfg, 0, nb * co)
    store_rows(b, y_buf, nb * co)
    counters = b.synchronize()
    np.testing.assert_array_equal(read_out(dev, cfg, y_buf, nb * co),
                                  expected.reshape(nb * co, cfg.batch, cfg.block_out))
    assert counters["insn_gemm"] == 2
    assert counters["macs"] == nb * co * ko * cfg.macs_per_cycle


def test_gemm_requantised_two_virtual_threads(cfg, dev, rng):
    """Output channels split between two threads with their own SRAM regions, batch
    processed in two chunks, instructions interleaved; explicit tokens keep every region
    from being reused before its consumer is done with it."""
    data, weight, expected = _gemm_operands(cfg, rng)
    nb, ko, co = data.shape[0], data.shape[1], weight.shape[0]
    nbc, coh = nb // 2, co // 2                        # rows per chunk, channels per thread
    d_buf, w_buf = upload(dev, data), upload(dev, weight)
    y_buf = out_buffer(dev, cfg, nb * co)
    inp_base = [k * nbc * ko for k in (0, 1)]
    wgt_base = [k * coh * ko for k in (0, 1)]
    acc_base = [k * nbc * coh for k in (0, 1)]
    b = ProgramBuilder(dev)
    for chunk in (0, 1):
        reuse = chunk > 0
        for k in (0, 1):                                # load stage of both threads
            if reuse:
                b.dep_pop("compute", "load")
            b.load_2d("inp", inp_base[k], d_buf, chunk * nbc * ko, nbc * ko)
            b.load_2d("wgt", wgt_base[k], w_buf, k * coh * ko, coh * ko)
            b.dep_push("load", "compute")
        for k in (0, 1):                                # compute stage
            b.dep_pop("load", "compute")
            if reuse:
                b.dep_pop("store", "compute")
            _gemm_tile(b, nbc, coh, ko, acc_base[k], inp_base[k], wgt_base[k])
            _requantise(b, cfg, acc_base[k], nbc * coh)
            b.dep_push("compute", "load")
            b.dep_push("compute", "store")
        for k in (0, 1):                                # store stage
            b.dep_pop("compute", "store")
            b.store_2d(acc_base[k], y_buf, chunk * nbc * co + k * coh, coh, nbc, co)
            b.dep_push("store", "compute")
    program = b.finish()
    assert sum(insn.pop_next for insn in program.insns if type(insn).__name__ == "FinishInsn")
    program.run(dev)
    np.testing.assert_array_equal(read_out(dev, cfg, y_buf, nb * co),
                                  expected.reshape(nb * co, cfg.batch, cfg.block_out))


# ---- ALU ------------------------------------------------------------------------------------

def shift_ref(x: int, amount: int, cfg) -> int:
    """VTA's SHR: the low log2(acc_bits) bits of the amount, signed; negative shifts left."""
    bits = cfg.shift_bits
    amount = ((amount & ((1 << bits) - 1)) ^ (1 << (bits - 1))) - (1 << (bits - 1))
    return x >> amount if amount >= 0 else int(wrap(x << -amount, cfg.acc_bits))


def alu_ref(op, a: np.ndarray, b, cfg) -> np.ndarray:
    a64 = a.astype(np.int64)
    b64 = np.broadcast_to(np.asarray(b, dtype=np.int64), a64.shape)
    if op == AluOp.MIN:
        return np.minimum(a64, b64)
    if op == AluOp.MAX:
        return np.maximum(a64, b64)
    if op == AluOp.ADD:
        return wrap(a64 + b64, cfg.acc_bits)
    if op == AluOp.MUL:
        return wrap(a64 * b64, cfg.acc_bits)
    if op == AluOp.MOV:
        return b64.copy()
    if op == AluOp.SAT:   # immediate: shift/relu of a; acc operand: a + b, immediate 0
        imm = int(b) if np.ndim(b) == 0 else 0
        x = a64 if np.ndim(b) == 0 else wrap(a64 + b64, cfg.acc_bits)
        x = np.array([shift_ref(int(v), imm, cfg) for v in x.flat]).reshape(a64.shape)
        top = (1 << (cfg.out_bits - 1)) - 1
        return np.clip(x, 0 if imm & (1 << cfg.shift_bits) else -top - 1, top)
    flat = [shift_ref(int(x), int(s), cfg) for x, s in zip(a64.flat, b64.flat)]
    return np.array(flat, dtype=np.int64).reshape(a64.shape)


IMMEDIATES = {
    AluOp.MIN: [-7, 0, 12345], AluOp.MAX: [-32768, 3, 32767], AluOp.ADD: [-32768, 1, 32767],
    AluOp.MUL: [-3, 0, 20000],
    # negative amounts and 16..31 shift left; -20 has low bits 12 (a right shift)
    AluOp.SHR: [0, 3, 15, -1, -16, 20, -20],
    AluOp.MOV: [-32768, 5, 32767],
    # shift 0, right 7, left 2 (amount -2 = 30); bit 5 = relu
    AluOp.SAT: [0, 7, 7 | 32, 30, 32],
}
IMM_CASES = [(op, imm) for op, imms in IMMEDIATES.items() for imm in imms]


def _alu_input(cfg, rows, rng):
    a = acc_entries(cfg, rows, INT32_MIN, INT32_MAX, rng)
    a.reshape(-1)[:4] = [INT32_MIN, INT32_MAX, 0, -1]
    return a


@pytest.mark.parametrize("op,imm", IMM_CASES, ids=[f"{o.name}{i}" for o, i in IMM_CASES])
def test_alu_immediate(cfg, dev, rng, op, imm):
    m = n = 8
    a = _alu_input(cfg, m * n, rng)
    a_buf, y_buf = upload(dev, a), out_buffer(dev, cfg, m * n)
    b = ProgramBuilder(dev)
    b.load_2d("acc", 0, a_buf, 0, m * n)
    alu_rows(b, op, m, n, imm=imm)
    store_rows(b, y_buf, m * n)
    b.synchronize()
    expected = alu_ref(op, a, imm, cfg)
    check_acc_sram(dev, slice(0, m * n), expected)
    np.testing.assert_array_equal(read_out(dev, cfg, y_buf, m * n), narrow(cfg, expected))


@pytest.mark.parametrize("op", list(AluOp), ids=[o.name for o in AluOp])
def test_alu_accumulator_operand(cfg, dev, rng, op):
    m = n = 8
    rows = m * n
    a = _alu_input(cfg, rows, rng)
    operand = acc_entries(cfg, rows, INT32_MIN, INT32_MAX, rng)
    if op == AluOp.SHR:                                # every amount -16..15 appears
        operand.reshape(-1)[:32] = np.arange(-16, 16)
    a_buf, b_buf, y_buf = upload(dev, a), upload(dev, operand), out_buffer(dev, cfg, rows)
    b = ProgramBuilder(dev)
    b.load_2d("acc", 0, a_buf, 0, rows)
    b.load_2d("acc", rows, b_buf, 0, rows)
    alu_rows(b, op, m, n, src_base=rows)
    store_rows(b, y_buf, rows)
    b.synchronize()
    expected = alu_ref(op, a, operand, cfg)
    check_acc_sram(dev, slice(0, rows), expected)
    np.testing.assert_array_equal(read_out(dev, cfg, y_buf, rows), narrow(cfg, expected))


def test_relu(cfg, dev, rng):
    m, n = 8, 10
    a = acc_entries(cfg, m * n, -256, 256, rng)
    a_buf, y_buf = upload(dev, a), out_buffer(dev, cfg, m * n)
    b = ProgramBuilder(dev)
    b.load_2d("acc", 0, a_buf, 0, m * n)
    alu_rows(b, AluOp.MAX, m, n, imm=0)
    alu_rows(b, AluOp.MIN, m, n, imm=(1 << (cfg.inp_bits - 1)) - 1)
    store_rows(b, y_buf, m * n)
    b.synchronize()
    expected = np.clip(a, 0, (1 << (cfg.inp_bits - 1)) - 1).astype(np.int8)
    np.testing.assert_array_equal(read_out(dev, cfg, y_buf, m * n), expected)


def test_shift_and_scale(cfg, dev, rng):
    m, n = 2, 8
    imm_shift, imm_scale = int(rng.integers(0, 8)), int(rng.integers(1, 5))
    a = acc_entries(cfg, m * n, -10, 10, rng)
    a_buf, y_buf = upload(dev, a), out_buffer(dev, cfg, m * n)
    b = ProgramBuilder(dev)
    b.load_2d("acc", 0, a_buf, 0, m * n)
    alu_rows(b, AluOp.ADD, m, n, imm=imm_shift)
    alu_rows(b, AluOp.SHR, m, n, imm=imm_scale)
    store_rows(b, y_buf, m * n)
    b.synchronize()
    expected = np.right_shift(a.astype(np.int64) + imm_shift, imm_scale).astype(np.int8)
    np.testing.assert_array_equal(read_out(dev, cfg, y_buf, m * n), expected)


def test_runtime_array_round_trip(cfg, dev, rng):
    n = 100
    x = rng.integers(1, 10, size=(n, n, cfg.batch, cfg.block_out)).astype(np.int8)
    buf = upload(dev, x)
    np.testing.assert_array_equal(dev.copy_out(buf, np.int8, x.shape), x)
    big = rng.integers(INT32_MIN, INT32_MAX, size=1 << 20, dtype=np.int64).astype(np.int32)
    big_buf = dev.alloc(big.nbytes + 4096)
    dev.copy_in(big_buf, big, offset=4096)
    np.testing.assert_array_equal(dev.copy_out(big_buf, np.int32, big.shape, offset=4096), big)
    np.testing.assert_array_equal(dev.copy_out(buf, np.int8, x.shape), x)   # untouched
