"""The program builder: token flag placement, no-ops, FINISH balancing, instruction/uop
placement in DRAM, and argument errors (micro-kernels: test_uop_kernel.py)."""
import pytest
from hypothesis import given, settings, strategies as st

from vtalab.runtime import Loop, ProgramBuilder, UopKernel, noop, open_device
from vtalab.runtime.program import UOP_SYMBOL
from vtalab.spec import Isa, preset
from vtalab.spec.errors import IsaError, ProgramError
from vtalab.spec.isa import AluOp, FinishInsn, GemmInsn, Mem, MemInsn, Opcode

CFG = preset("tiny")
FLAGS = ("pop_prev", "pop_next", "push_prev", "push_next")


def flags(insn) -> set:
    return {name for name in FLAGS if getattr(insn, name)}


def is_noop(insn) -> bool:
    return isinstance(insn, MemInsn) and insn.x_size == 0 and insn.y_size == 0


@pytest.fixture
def b():
    return ProgramBuilder(CFG)


def gemm_kernel(n: int = 1, base: int = 0) -> UopKernel:
    return UopKernel.gemm([(base + k, k, 0) for k in range(n)])


# ---- dependency tokens ----------------------------------------------------------------------

def test_push_flags_the_last_instruction_of_the_module(b):
    b.load_2d("inp", 0, 0, 0, 4)
    b.load_2d("acc", 0, 0, 0, 4)                       # compute module, issued later
    b.dep_push("load", "compute")
    assert flags(b.insns[0]) == {"push_next"} and flags(b.insns[1]) == set()
    b.dep_push("compute", "load")
    assert flags(b.insns[1]) == {"push_prev"}
    assert len(b.insns) == 2


@pytest.mark.parametrize("src,dst,module,flag", [
    ("load", "compute", "load", "push_next"), ("compute", "load", "compute", "push_prev"),
    ("compute", "store", "compute", "push_next"), ("store", "compute", "store", "push_prev"),
])
def test_push_without_instruction_inserts_noop(b, src, dst, module, flag):
    b.dep_push(src, dst)
    (insn,) = b.insns
    assert is_noop(insn) and flags(insn) == {flag}
    assert insn == noop(module, **{flag: True})


def test_second_push_on_flagged_instruction_inserts_noop(b):
    b.store_2d(0, 0, 0, 1)
    b.dep_push("store", "compute")
    b.dep_push("store", "compute")
    assert flags(b.insns[0]) == {"push_prev"}
    assert is_noop(b.insns[1]) and b.insns[1].opcode == Opcode.STORE
    assert b.tokens["s2c"] == 2


@pytest.mark.parametrize("src,dst,flag,make", [
    ("load", "compute", "pop_prev", lambda b: b.load_2d("acc", 0, 0, 0, 1)),
    ("store", "compute", "pop_next", lambda b: b.push_alu(UopKernel.alu("ADD", [(0, 0)], imm=1))),
    ("compute", "load", "pop_next", lambda b: b.load_2d("wgt", 0, 0, 0, 1)),
    ("compute", "store", "pop_prev", lambda b: b.store_2d(0, 0, 0, 1)),
])
def test_pop_flags_the_next_instruction_of_the_target(b, src, dst, flag, make):
    b.load_2d("inp", 0, 0, 0, 1) if dst != "load" else b.store_2d(0, 0, 0, 1)  # other module
    b.dep_pop(src, dst)
    make(b)
    assert flags(b.insns[0]) == set()
    assert flags(b.insns[1]) == {flag}                 # first insn of the target module


def test_pops_land_on_uop_load_then_on_cached_gemm(b):
    b.dep_pop("load", "compute")
    b.push_gemm(gemm_kernel())
    assert b.insns[0].mem == Mem.UOP and flags(b.insns[0]) == {"pop_prev"}
    assert flags(b.insns[1]) == set()
    b.dep_pop("load", "compute")
    b.push_gemm(gemm_kernel())                         # cache hit: no uop load
    assert isinstance(b.insns[2], GemmInsn) and flags(b.insns[2]) == {"pop_prev"}


def test_repeated_pop_commits_the_earlier_one_as_noop(b):
    b.dep_pop("load", "compute")
    b.dep_pop("load", "compute")
    b.load_2d("acc", 0, 0, 0, 1)
    assert is_noop(b.insns[0]) and flags(b.insns[0]) == {"pop_prev"}
    assert flags(b.insns[1]) == {"pop_prev"}


def test_push_after_pending_pop_orders_pop_first(b):
    b.dep_pop("compute", "store")
    b.dep_push("store", "compute")
    (insn,) = b.insns
    assert is_noop(insn) and flags(insn) == {"pop_prev", "push_prev"}


def test_both_pops_share_one_instruction(b):
    b.dep_pop("load", "compute")
    b.dep_pop("store", "compute")
    b.load_2d("acc", 0, 0, 0, 1)
    assert flags(b.insns[0]) == {"pop_prev", "pop_next"}


@pytest.mark.parametrize("pair", [("load", "store"), ("store", "load"), ("load", "load"),
                                  ("compute", "fetch")])
def test_impossible_queue_is_refused(b, pair):
    with pytest.raises(ProgramError, match=r"token queue must be one of \['load->compute'"):
        b.dep_push(*pair)


# ---- finish / synchronize -------------------------------------------------------------------

def test_finish_of_empty_program_is_one_finish(b):
    program = b.finish()
    assert program.insns == [FinishInsn()]


def test_finish_drains_leftover_tokens_and_waits_for_stores(b):
    b.dep_push("compute", "load")
    b.dep_push("compute", "load")
    b.dep_push("compute", "store")
    b.store_2d(0, 0, 0, 1)                              # never popped c2s: store drains it
    insns = b.finish().insns
    load_pops = [i for i in insns if isinstance(i, MemInsn) and i.mem == Mem.INP]
    assert [flags(i) for i in load_pops] == [{"pop_next"}, {"pop_next", "push_next"}]
    store_noop = [i for i in insns if getattr(i, "opcode", None) == Opcode.STORE][-1]
    assert flags(store_noop) == {"pop_prev", "push_prev"}
    assert flags(insns[-1]) == {"pop_prev", "pop_next"}   # FINISH collects l2c and s2c
    assert isinstance(insns[-1], FinishInsn)


def test_finish_runs_with_no_tokens_left_over():
    with open_device("fsim", CFG, dram_bytes=1 << 16) as dev:
        b = ProgramBuilder(dev)
        for _ in range(3):
            b.dep_push("compute", "store")
            b.dep_push("load", "compute")
            b.dep_push("compute", "load")
        counters = b.synchronize()                     # the simulator rejects leftovers
        assert counters["insn_finish"] == 1


ACTIONS = ["load_inp", "load_wgt", "load_acc", "gemm", "alu", "store",
           ("load", "compute"), ("compute", "load"), ("compute", "store"), ("store", "compute")]


def _apply(b, buf, action, pop: bool) -> None:
    if isinstance(action, tuple):
        if pop and b.tokens[f"{action[0][0]}2{action[1][0]}"] > 0:
            b.dep_pop(*action)
        else:
            b.dep_push(*action)
    elif action.startswith("load"):
        b.load_2d(action[5:], 0, buf, 0, 2)
    elif action == "gemm":
        b.push_gemm(gemm_kernel(2))
    elif action == "alu":
        b.push_alu(UopKernel.alu(AluOp.ADD, [(0, 1)], imm=3))
    else:
        b.store_2d(0, buf, 0, 2)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(ACTIONS), st.booleans()), max_size=30))
def test_any_program_whose_pops_follow_pushes_runs(actions):
    """Pops that come after their pushes in program order can never deadlock, and FINISH
    balances whatever is left: the simulator, which checks both, must accept the program."""
    with open_device("fsim", CFG, dram_bytes=1 << 16) as dev:
        buf = dev.alloc(4096)
        b = ProgramBuilder(dev)
        for action, pop in actions:
            _apply(b, buf, action, pop)
        counters = b.synchronize()
        kinds = [a for a, _ in actions if isinstance(a, str)]
        assert counters["insn_finish"] == 1
        assert counters["insn_gemm"] == kinds.count("gemm")
        assert counters["insn_alu"] == kinds.count("alu")


def test_unbalanced_pop_is_refused(b):
    b.dep_pop("load", "compute")
    b.load_2d("acc", 0, 0, 0, 1)
    with pytest.raises(ProgramError, match="popped from queue l2c must not outnumber those "
                                           "pushed, not by 1"):
        b.finish()


def test_builder_starts_over_after_finish(b):
    b.push_gemm(gemm_kernel())
    first = b.finish()
    b.push_gemm(gemm_kernel())
    second = b.finish()
    assert first.insns == second.insns                 # cache and uop array start afresh
    assert second.uop_words.tolist() == first.uop_words.tolist()


def test_synchronize_needs_a_device(b):
    with pytest.raises(ProgramError, match="synchronize needs a device"):
        b.synchronize()


# ---- placement in DRAM ------------------------------------------------------------------------

def test_program_encodes_with_relocated_uop_loads(b):
    b.push_gemm(gemm_kernel(2))
    b.push_alu(UopKernel.alu(AluOp.ADD, [(0, 1)]))
    program = b.finish()
    isa = Isa(CFG)
    insns = isa.decode_program(program.encode({UOP_SYMBOL: 1000 * 4}))
    assert [i.dram_base for i in insns if isinstance(i, MemInsn)] == [1000, 1002]
    dst, src, wgt = isa.decode_uops(program.uop_words)
    assert (dst.tolist(), src.tolist()) == ([0, 1, 0], [0, 1, 1])
    assert len(program.encode()) == 16 * len(program)
    text = "\n".join(program.disasm())
    assert "GEMM" in text and "ALU    ADD" in text and "@__uop__" in text


def test_run_places_stream_and_frees_it():
    with open_device("fsim", CFG, dram_bytes=1 << 16) as dev:
        b = ProgramBuilder(dev)
        b.push_gemm(gemm_kernel(3))
        program = b.finish()
        program.run(dev)
        assert dev.allocator.used_bytes == 0
        assert dev.last_counters["bytes_uop"] == 12 and dev.last_counters["insn_load"] == 1


def test_program_refuses_other_config():
    program = ProgramBuilder(CFG).finish()
    with open_device("fsim", "default", dram_bytes=1 << 16) as dev:
        with pytest.raises(Exception, match="device config must match the program's"):
            program.run(dev)


# ---- argument errors --------------------------------------------------------------------------

@pytest.mark.parametrize("call,error,match", [
    (lambda b: b.load_2d("inp", 0, 0, 0, 0), ProgramError,
     "x_size must be an integer of at least 1, not 0"),
    (lambda b: b.load_2d("inp", 0, 0, 0, 4, 2, 3), ProgramError,
     "x_stride must be at least x_size \\(4\\), not 3"),
    (lambda b: b.load_2d("inp", CFG.inp_depth - 2, 0, 0, 4), ProgramError,
     f"inp entries 254..257 must lie inside the inp buffer \\(inp_depth {CFG.inp_depth}\\)"),
    (lambda b: b.load_2d("acc", 0, 0, 0, 2, y_pad_before=16), IsaError, "y_pad_0.*4 bits"),
    (lambda b: b.load_2d("wgt", 0, 0, 0, 2, x_pad_after=1), ProgramError,
     "pads must be 0 for a wgt load"),
    (lambda b: b.load_2d("out", 0, 0, 0, 2), ProgramError, "load memory type must be"),
    (lambda b: b.load_2d("sram", 0, 0, 0, 2), ProgramError, "memory type must be one of"),
    (lambda b: b.load_2d("inp", 0, 4, 0, 2), ProgramError,
     "dram address must be a multiple of the inp entry size \\(8 bytes\\), not 0x4"),
    (lambda b: b.load_2d("inp", 0, "x", 0, 2), ProgramError, "dram must be a Buffer"),
    (lambda b: b.store_2d(0, 0, 0, 1, mem="acc"), ProgramError,
     "store memory type must be out, not 'acc'"),
    (lambda b: b.push_alu(UopKernel.alu("ADD", [(0, 0)], imm=1 << 15)), IsaError,
     "imm must fit in 16 signed bits"),
    (lambda b: b.push_gemm(UopKernel.gemm([(CFG.acc_depth, 0, 0)])), IsaError,
     "dst must fit in 8 bits"),
    (lambda b: b.push_gemm(UopKernel.gemm([(0, 0, 0)], [Loop(1 << 14)])), IsaError,
     "iter_out must fit in 14 bits"),
    (lambda b: UopKernel.gemm([(0, 0, 0)], [(1,), (1,), (1,)]), ProgramError,
     "at most 2 loops, not 3"),
    (lambda b: UopKernel.alu("ADD", [(0, 0)], [Loop(2, dst_factor=-1)]), ProgramError,
     "loop dst_factor must be a non-negative integer, not -1"),
])
def test_bad_arguments_name_the_field(b, call, error, match):
    with pytest.raises(error, match=match):
        call(b)


def test_tile_outside_a_buffer_is_refused():
    with open_device("fsim", CFG, dram_bytes=1 << 16) as dev:
        buf = dev.alloc(4 * CFG.entry_bytes("acc"))
        b = ProgramBuilder(dev)
        b.load_2d("acc", 0, buf, 1, 3)                 # fits exactly
        with pytest.raises(ProgramError, match="acc elements 2..5 must lie inside the buffer "
                                               "of 4 acc elements"):
            b.load_2d("acc", 0, buf, 2, 2, 2, 2)


def test_builder_needs_config_or_device():
    with pytest.raises(Exception, match="target must be a Config or a Device"):
        ProgramBuilder("tiny")
