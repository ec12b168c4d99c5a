"""Functional simulator: vectorised GEMM/ALU against a naive per-micro-op reference,
token scheduling, deadlock and out-of-bounds errors."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from vtalab.sim.fsim import FunctionalSimulator
from vtalab.spec import Isa, preset
from vtalab.spec.errors import DeadlockError, MemoryAccessError, SimError, TokenError
from vtalab.spec.isa import AluInsn, AluOp, FinishInsn, GemmInsn, Mem, MemInsn, Opcode

CFG = preset("tiny")


def wrap(x, bits):
    return ((int(x) + (1 << bits - 1)) % (1 << bits)) - (1 << bits - 1)


def reference_loop(insn, uops):
    for i in range(insn.iter_out):
        for j in range(insn.iter_in):
            for dst, src, wgt in uops[insn.uop_bgn:insn.uop_end]:
                yield (dst + i * insn.dst_factor_out + j * insn.dst_factor_in,
                       src + i * insn.src_factor_out + j * insn.src_factor_in,
                       wgt + i * getattr(insn, "wgt_factor_out", 0)
                       + j * getattr(insn, "wgt_factor_in", 0))


def reference_shift(a, amount, cfg):
    amount = wrap(amount & (cfg.acc_bits - 1), cfg.shift_bits)
    return a >> amount if amount >= 0 else wrap(a << -amount, cfg.acc_bits)


def reference_sat(a, src, imm, cfg):
    """SAT: (a [+ src]) >> low 5 bits of imm, clipped to int8 (to 0..127 with imm bit 5)."""
    x = a if src is None else wrap(a + src, cfg.acc_bits)
    x = reference_shift(x, imm, cfg)
    lo = 0 if (imm >> cfg.shift_bits) & 1 else -(1 << cfg.out_bits - 1)
    return min(max(x, lo), (1 << cfg.out_bits - 1) - 1)


def reference_alu(op, a, b, cfg):
    if op == AluOp.MOV:
        return b
    if op == AluOp.MIN:
        return min(a, b)
    if op == AluOp.MAX:
        return max(a, b)
    if op == AluOp.ADD:
        return wrap(a + b, cfg.acc_bits)
    if op == AluOp.MUL:
        return wrap(a * b, cfg.acc_bits)
    return reference_shift(a, b, cfg)


def reference_run(sim, insn, uops):
    """Per-micro-op, per-element reference of one GEMM/ALU instruction (mutates copies)."""
    acc = sim.sram.acc.astype(np.int64).copy()
    out = sim.sram.out.copy()
    cfg = sim.cfg
    for dst, src, wgt in reference_loop(insn, uops):
        if isinstance(insn, GemmInsn):
            if insn.reset:
                value = np.zeros_like(acc[dst])
            else:
                prod = sim.sram.inp[src].astype(np.int64) @ sim.sram.wgt[wgt].astype(np.int64).T
                value = np.vectorize(lambda v: wrap(v, cfg.acc_bits))(acc[dst] + prod)
        else:
            rhs = np.full_like(acc[dst], insn.imm) if insn.use_imm else acc[src]
            if insn.alu_op == AluOp.SAT:
                value = np.array([reference_sat(int(a), None if insn.use_imm else int(b),
                                                insn.imm, cfg)
                                  for a, b in zip(acc[dst].flat, acc[src].flat)],
                                 np.int64).reshape(acc[dst].shape)
            else:
                value = np.vectorize(lambda a, b: reference_alu(insn.alu_op, int(a), int(b),
                                                                cfg))(acc[dst], rhs)
        acc[dst] = value
        out[dst] = value.astype(np.int64).astype(out.dtype)
    return acc, out


def setup_sim(rng, uops):
    sim = FunctionalSimulator(CFG, dram_bytes=1 << 16)
    sim.sram.inp[...] = rng.integers(-128, 128, sim.sram.inp.shape)
    sim.sram.wgt[...] = rng.integers(-128, 128, sim.sram.wgt.shape)
    sim.sram.acc[...] = rng.integers(-2**31, 2**31, sim.sram.acc.shape)
    isa = Isa(CFG)
    sim.sram.uop[:len(uops)] = isa.encode_uops(*zip(*uops)) if uops else []
    return sim


loop_fields = dict(iter_out=st.integers(1, 3), iter_in=st.integers(1, 3),
                   dst_factor_out=st.integers(0, 9), dst_factor_in=st.integers(0, 5),
                   src_factor_out=st.integers(0, 9), src_factor_in=st.integers(0, 5))
uop_lists = st.lists(st.tuples(st.integers(0, 40), st.integers(0, 40), st.integers(0, 20)),
                     min_size=1, max_size=6)


@settings(max_examples=60, deadline=None)
@given(uops=uop_lists, reset=st.booleans(), seed=st.integers(0, 2**32 - 1),
       wfo=st.integers(0, 4), wfi=st.integers(0, 4), fields=st.fixed_dictionaries(loop_fields))
def test_gemm_matches_per_uop_reference(uops, reset, seed, wfo, wfi, fields):
    sim = setup_sim(np.random.default_rng(seed), uops)
    insn = GemmInsn(reset=reset, uop_bgn=0, uop_end=len(uops), wgt_factor_out=wfo,
                    wgt_factor_in=wfi, **fields)
    acc, out = reference_run(sim, insn, uops)
    sim.compute.gemm(insn)
    np.testing.assert_array_equal(sim.sram.acc, acc)
    np.testing.assert_array_equal(sim.sram.out, out)


@settings(max_examples=80, deadline=None)
@given(uops=uop_lists, op=st.sampled_from(list(AluOp)), use_imm=st.booleans(),
       imm=st.integers(-2**15, 2**15 - 1), seed=st.integers(0, 2**32 - 1),
       fields=st.fixed_dictionaries(loop_fields))
def test_alu_matches_sequential_reference(uops, op, use_imm, imm, seed, fields):
    # Overlapping dst/src rows make later micro-ops read earlier results: order matters.
    sim = setup_sim(np.random.default_rng(seed), uops)
    insn = AluInsn(alu_op=op, use_imm=use_imm, imm=imm, uop_bgn=0, uop_end=len(uops), **fields)
    acc, out = reference_run(sim, insn, uops)
    sim.compute.alu(insn)
    np.testing.assert_array_equal(sim.sram.acc, acc)
    np.testing.assert_array_equal(sim.sram.out, out)


def test_shift_amounts_follow_vta():
    # The amount is the operand's low 5 bits read as signed: 16..31 shift left by 16..1.
    cfg = preset("default")
    sim = FunctionalSimulator(cfg, dram_bytes=4096)
    sim.sram.uop[0] = 0
    for imm, expect in [(2, [-256, 256, 0, -1]), (16, [-1024 << 16, 1024 << 16, 3 << 16, -3 << 16]),
                        (31, [-2048, 2048, 6, -6]), (-1, [-2048, 2048, 6, -6]),
                        (33, [-512, 512, 1, -2])]:
        sim.sram.acc[0, 0, :] = [-1024, 1024, 3, -3] * 4
        sim.compute.alu(AluInsn(alu_op=AluOp.SHR, use_imm=True, imm=imm))
        assert sim.sram.acc[0, 0, :4].tolist() == expect, imm


def test_sat_requantises_to_the_out_range():
    # (x + bias) >> 3 clipped to int8; with the relu bit (imm bit 5) the floor is 0.
    cfg = preset("default")
    sim = FunctionalSimulator(cfg, dram_bytes=4096)
    sim.sram.uop[0] = Isa(cfg).encode_uops(0, 1, 0)
    x = [-4000, 4000, 100, -100, 7, -9, 1 << 30, -(1 << 30)] * 2
    for use_imm, bias in ((True, 0), (False, 24)):
        for relu in (False, True):
            sim.sram.acc[0, 0, :] = x
            sim.sram.acc[1, 0, :] = bias
            imm = 3 | (32 if relu else 0)
            sim.compute.alu(AluInsn(alu_op=AluOp.SAT, use_imm=use_imm, imm=imm))
            want = np.clip((np.array(x, np.int64) + bias) >> 3, 0 if relu else -128, 127)
            assert sim.sram.acc[0, 0, :].tolist() == want.tolist(), (use_imm, relu)
            assert sim.sram.out[0, 0, :].tolist() == want.tolist()


def _finish(**deps):
    return FinishInsn(**deps)


def test_deadlock_names_instruction_and_queue():
    sim = FunctionalSimulator(CFG, dram_bytes=1 << 16)
    prog = [MemInsn(opcode=Opcode.LOAD, mem=Mem.INP, pop_next=True), _finish()]
    with pytest.raises(DeadlockError, match=r"load module at instruction 0 .* pop from empty "
                                            r"queue c2l"):
        sim.run_program(prog)


def test_leftover_tokens_are_an_error():
    sim = FunctionalSimulator(CFG, dram_bytes=1 << 16)
    prog = [MemInsn(opcode=Opcode.LOAD, mem=Mem.INP, push_next=True), _finish()]
    with pytest.raises(TokenError, match=r"l2c \(1\)"):
        sim.run_program(prog)


def test_tokens_order_modules():
    # compute waits for the load's token, store waits for compute: the result is defined.
    sim = FunctionalSimulator(CFG, dram_bytes=1 << 16)
    entry = CFG.entry_bytes("acc")
    sim.dram[:entry] = np.arange(entry, dtype=np.uint8)
    sim.sram.uop[0] = 0
    prog = [MemInsn(opcode=Opcode.LOAD, mem=Mem.ACC, x_size=1, y_size=1),
            AluInsn(alu_op=AluOp.ADD, use_imm=True, imm=1, push_next=True),
            MemInsn(opcode=Opcode.STORE, mem=Mem.OUT, dram_base=100, pop_prev=True,
                    push_prev=True),
            _finish(pop_next=True)]
    counters = sim.run_program(prog)
    acc_row = np.arange(entry, dtype=np.uint8).view("<i4") + 1
    stored = sim.dram[100 * CFG.entry_bytes("out"):][:CFG.entry_bytes("out")].view(np.int8)
    np.testing.assert_array_equal(stored, acc_row.astype(np.int8))
    assert counters["insn_store"] == 1 and counters["alu_uops"] == 1


@pytest.mark.parametrize("insn, message", [
    (MemInsn(mem=Mem.INP, sram_base=250, x_size=10), r"inp entries 250..259 must lie inside"),
    (MemInsn(mem=Mem.WGT, dram_base=1 << 20), r"DRAM elements .* must lie below"),
    (MemInsn(opcode=Opcode.STORE, mem=Mem.OUT, sram_base=256), r"out entries 256..256"),
    (GemmInsn(uop_bgn=0, uop_end=1, iter_out=300, dst_factor_out=1), r"acc index must be below"),
])
def test_out_of_bounds_raises(insn, message):
    sim = FunctionalSimulator(CFG, dram_bytes=1 << 16)
    with pytest.raises(MemoryAccessError, match=message):
        sim.run_program([insn, _finish()])


def test_program_order_errors_stop_after_the_instructions_before_them():
    # a pop whose push comes later in program order is a deadlock (the hardware's fetch
    # unit finds it there); the STORE before it ran, nothing after it did
    sim = FunctionalSimulator(CFG, dram_bytes=1 << 16)
    sim.sram.out[0] = 5
    prog = [MemInsn(opcode=Opcode.STORE, mem=Mem.OUT, dram_base=10),
            GemmInsn(reset=True, pop_prev=True),
            MemInsn(mem=Mem.INP, push_next=True),
            MemInsn(opcode=Opcode.STORE, mem=Mem.OUT, dram_base=20), _finish()]
    with pytest.raises(DeadlockError, match=r"compute module at instruction 1 \(GEMM\)"):
        sim.run_program(prog)
    entry = CFG.entry_bytes("out")
    assert (sim.dram[10 * entry:11 * entry] == 5).all()
    assert (sim.dram[20 * entry:21 * entry] == 0).all()


def test_program_must_end_with_one_finish():
    sim = FunctionalSimulator(CFG, dram_bytes=1 << 16)
    with pytest.raises(SimError, match="exactly one FINISH"):
        sim.run_program([MemInsn(mem=Mem.INP)])
    with pytest.raises(SimError, match="must not set pop_prev"):
        sim.run_program([MemInsn(mem=Mem.INP, pop_prev=True), _finish()])


def matmul_reference_run(sim, insn, uops):
    """Per-micro-op GEMM with numpy products (fast enough for thousands of micro-ops)."""
    acc = sim.sram.acc.astype(np.int64).copy()
    for dst, src, wgt in reference_loop(insn, uops):
        acc[dst] += sim.sram.inp[src].astype(np.int64) @ sim.sram.wgt[wgt].astype(np.int64).T
    return (acc + 2**31) % 2**32 - 2**31


ROLE_FACTORS = {   # (dst, src, wgt) factor of a loop in each role; 1 marks "random, non-zero"
    "m": (1, 1, 0), "n": (1, 0, 1), "k": (0, 1, 1), "mixed": (1, 1, 1), "none": (0, 0, 0)}


@settings(max_examples=80, deadline=None)
@given(n_uops=st.integers(1, 8), dst_bases=st.integers(1, 3),
       iters=st.tuples(st.integers(1, 12), st.integers(1, 12)),
       roles=st.tuples(st.sampled_from(sorted(ROLE_FACTORS)), st.sampled_from(sorted(ROLE_FACTORS))),
       seed=st.integers(0, 2**32 - 1), dense=st.booleans())
def test_gemm_structured_loops_match_reference(n_uops, dst_bases, iters, roles, seed, dense):
    # Loops that move dst+src (M), dst+wgt (N) or only src+wgt (K): the few-BLAS-calls path
    # of the simulator; other shapes take the general path. Both must match.
    rng = np.random.default_rng(seed)
    uops = [(int(rng.integers(0, dst_bases)) * (1 if dense else 7), int(rng.integers(0, 20)),
             int(rng.integers(0, 10))) for _ in range(n_uops)]
    sim = setup_sim(rng, uops)
    fields = {}
    for loop, role, extent in zip(("out", "in"), roles, iters):
        fd, fs, fw = ROLE_FACTORS[role]
        fields[f"dst_factor_{loop}"] = fd * (iters[1] if loop == "out" else 1)
        fields[f"src_factor_{loop}"] = fs * int(rng.integers(1, 11))
        fields[f"wgt_factor_{loop}"] = fw * int(rng.integers(1, 3))
    insn = GemmInsn(uop_bgn=0, uop_end=len(uops), iter_out=iters[0], iter_in=iters[1], **fields)
    expected = matmul_reference_run(sim, insn, uops)
    sim.compute.gemm(insn)
    np.testing.assert_array_equal(sim.sram.acc, expected)


@pytest.mark.parametrize("k_extent", [16, 24])
def test_gemm_long_reductions_stay_exact(k_extent):
    # Products of about 127 x 114 summed over k_extent x 8 uops x block_in 8 pass 2**24 at
    # 24, where float32 would round: the plan must switch to float64 there and stay exact.
    uops = [(0, u, u) for u in range(8)]
    rng = np.random.default_rng(0)
    sim = setup_sim(rng, uops)
    sim.sram.inp[...] = 127
    sim.sram.wgt[...] = rng.integers(100, 128, sim.sram.wgt.shape)
    sim.sram.acc[...] = 0
    insn = GemmInsn(uop_bgn=0, uop_end=8, iter_out=k_extent, src_factor_out=8, iter_in=1)
    expected = matmul_reference_run(sim, insn, uops)
    assert expected.max() > 1 << 24 if k_extent == 24 else expected.max() < 1 << 24
    sim.compute.gemm(insn)
    np.testing.assert_array_equal(sim.sram.acc, expected)
    sim.compute.gemm(insn)      # the cached plan, again
    np.testing.assert_array_equal(sim.sram.acc, 2 * expected)


def test_gemm_plan_sees_new_uops_and_loaded_data():
    # Same instruction, different micro-op words or inp rows: never a stale plan or copy.
    uops = [(0, 0, 0), (1, 1, 0)]
    sim = setup_sim(np.random.default_rng(1), uops)
    insn = GemmInsn(uop_bgn=0, uop_end=2)
    expected, _ = reference_run(sim, insn, uops)
    sim.compute.gemm(insn)
    np.testing.assert_array_equal(sim.sram.acc, expected)
    uops = [(0, 2, 1), (1, 3, 1)]
    sim.sram.uop[:2] = Isa(CFG).encode_uops(*zip(*uops))
    sim.sram.inp[2:4] = 5
    sim.compute.loaded("inp", 2, 2)
    expected, _ = reference_run(sim, insn, uops)
    sim.compute.gemm(insn)
    np.testing.assert_array_equal(sim.sram.acc, expected)
