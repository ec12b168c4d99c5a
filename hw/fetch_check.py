"""The fetch unit's program-order checks (spec/legality.py, in the same order).

Each instruction is checked as it enters the dispatch slice (``enter``), in program order,
from flags decoded and registered on its way into the buffer (:meth:`FetchCheck.decode`):
its encoding, its module's dependency flags, its 2-D stride and micro-op range, and the
tokens it pops and pushes against counts of the queues *in program order* (four small
counters: a pop of a queue no earlier instruction pushed into is the deadlock it would
cause, found before anything waits). The first failing instruction's code and program
index are latched (``latched``, ``index``) and it and every later instruction are dropped
(``drop``); ``aborted`` then ends the run once the modules have finished the instructions
before it. ``start`` clears everything. (``index`` counts from -1: after a run it is the
last instruction checked, the failing one.)
"""
from __future__ import annotations

from amaranth.hdl import Cat, Module, Signal
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from vtalab.spec import Config
from vtalab.spec.isa import LOOP_OPCODES, MAX_TOKENS, AluOp, Mem, Opcode
from vtalab.spec.regs import ERROR_CODE_BITS, ErrorCode

from .isa_layout import isa_layouts

COUNT_BITS = 32
QUEUES = ("l2c", "c2l", "c2s", "s2c")
#: the checks that need only the instruction word, in ErrorCode order (:meth:`decode`)
INSN_CODES = (ErrorCode.OPCODE, ErrorCode.MEMORY_TYPE, ErrorCode.ALU_OPCODE,
              ErrorCode.TOKEN_FLAG, ErrorCode.STRIDE, ErrorCode.UOP_RANGE)
DECODE_BITS = 2 * len(QUEUES) + len(INSN_CODES) + 1


class FetchCheck(wiring.Component):
    def __init__(self, cfg: Config):
        self.cfg = cfg
        super().__init__({
            "start": In(1), "insn_count": In(COUNT_BITS),
            "enter": In(1),
            # the instruction's decode, registered on its way into the buffer
            # (:meth:`decode`): the counters' adders and the drop start from flip-flops
            "flags": In(DECODE_BITS),
            "code": Out(ERROR_CODE_BITS),          # this instruction's, combinational
            "drop": Out(1),
            "aborted": Out(1), "latched": Out(ERROR_CODE_BITS), "index": Out(COUNT_BITS),
        })

    def elaborate(self, platform):
        m = Module()
        count = len(QUEUES)
        pops = dict(zip(QUEUES, self.flags[:count]))
        pushes = dict(zip(QUEUES, self.flags[count:2 * count]))
        insn_bad = self.flags[2 * count:2 * count + len(INSN_CODES)]
        finish = self.flags[-1]
        last = self._last(m)
        finish_seen = self._finish_seen = Signal()
        conditions = [                     # in ErrorCode order: the first true one counts
            (ErrorCode.AFTER_FINISH, finish_seen),
            *zip(INSN_CODES, insn_bad),
            *self._tokens(m, finish, pops, pushes),
            (ErrorCode.NO_FINISH, last & ~finish),
        ]
        for code, condition in reversed(conditions):
            with m.If(condition):
                m.d.comb += self.code.eq(code)
        self._latch(m, Cat(*(c for _, c in conditions)).any(), finish)
        return m

    def _latch(self, m, bad, finish) -> None:
        """Drop from the first bad instruction on; its code and index reach the registers a
        cycle later (``bad_q``), so no clock enable waits on the checks: ``drop`` is a flat
        OR of them, the code a register's data input, the index a counter of entries."""
        bad_q, code_q = Signal(), Signal.like(self.code)
        # an entry counted a cycle later: the index's 32 clock enables are one flip-flop
        counted = Signal()
        stopped = self.aborted | bad_q
        m.d.comb += self.drop.eq(stopped | bad)
        m.d.sync += [bad_q.eq(self.enter & ~stopped & bad), code_q.eq(self.code),
                     counted.eq(self.enter & ~stopped & ~self.start)]
        finish_seen = self._finish_seen
        with m.If(self.start):
            m.d.sync += [finish_seen.eq(0), self.aborted.eq(0), self.latched.eq(0),
                         self.index.eq(-1), bad_q.eq(0)]
        with m.Else():
            with m.If(self.enter & ~stopped):
                m.d.sync += finish_seen.eq(finish_seen | finish)
            with m.If(counted):                    # the index of the last one checked
                m.d.sync += self.index.eq(self.index + 1)
            with m.If(bad_q):
                m.d.sync += [self.aborted.eq(1), self.latched.eq(code_q)]

    def _last(self, m) -> Signal:
        """Whether the entering instruction is the program's last (a registered flag)."""
        left, last = Signal(COUNT_BITS), Signal()
        with m.If(self.start):
            m.d.sync += [left.eq(self.insn_count), last.eq(self.insn_count == 1)]
        with m.Elif(self.enter):
            m.d.sync += [left.eq(left - 1), last.eq(left == 2)]
        return last

    @staticmethod
    def route(mem) -> dict:
        """The module the dispatcher sends the instruction to (hw/fetch.py's decode)."""
        load = (mem.opcode == Opcode.LOAD) & ((mem.memory_type == Mem.INP)
                                              | (mem.memory_type == Mem.WGT))
        store = mem.opcode == Opcode.STORE
        return {"load": load, "store": store, "compute": ~load & ~store}

    @classmethod
    def decode(cls, cfg: Config, insn):
        """The ``flags`` input for instruction word ``insn`` (DECODE_BITS): per queue
        (QUEUES order) whether it pops it, then whether it pushes it
        (spec.isa.FLAG_QUEUES); then the checks of the word alone (INSN_CODES order);
        then whether it is FINISH."""
        lay = isa_layouts(cfg)
        mem, gemm, alu = (data.View(v, insn) for v in (lay.mem, lay.gemm, lay.alu))
        route = cls.route(mem)
        load, compute, store = route["load"], route["compute"], route["store"]
        pops = {"l2c": compute & mem.pop_prev, "s2c": compute & mem.pop_next,
                "c2l": load & mem.pop_next, "c2s": store & mem.pop_prev}
        pushes = {"l2c": load & mem.push_next, "c2l": compute & mem.push_prev,
                  "c2s": compute & mem.push_next, "s2c": store & mem.push_prev}
        op = mem.opcode
        is_mem = (op == Opcode.LOAD) | (op == Opcode.STORE)
        checks = {
            ErrorCode.OPCODE: op > max(Opcode),
            ErrorCode.MEMORY_TYPE: ((op == Opcode.LOAD) & (mem.memory_type > Mem.ACC))
            | ((op == Opcode.STORE) & (mem.memory_type != Mem.OUT)),
            ErrorCode.ALU_OPCODE: (op == Opcode.ALU) & (alu.alu_opcode > max(AluOp)),
            ErrorCode.TOKEN_FLAG: (load & (mem.pop_prev | mem.push_prev))
            | (store & (mem.pop_next | mem.push_next)),
            ErrorCode.STRIDE: is_mem & (mem.memory_type != Mem.UOP) & (mem.y_size > 1)
            & (mem.x_stride < mem.x_size),
            ErrorCode.UOP_RANGE: op.matches(*LOOP_OPCODES) & (gemm.uop_end > cfg.uop_depth),
        }
        return Cat(*(pops[q] for q in QUEUES), *(pushes[q] for q in QUEUES),
                   *(checks[c] for c in INSN_CODES), op == Opcode.FINISH)

    def _tokens(self, m, finish, pops, pushes) -> list:
        """Program-order token counts (with registered zero / one / full flags, so the
        checks are gates on flip-flops) and the three token conditions."""
        empty, full, left = [], [], []
        for q in QUEUES:
            count = Signal(range(MAX_TOKENS + 2), name=f"tokens_{q}")
            zero, one, top = (Signal(name=f"tokens_{q}_{n}") for n in ("zero", "one", "full"))
            nxt = count + pushes[q] - pops[q]
            with m.If(self.start):
                m.d.sync += [count.eq(0), zero.eq(1), one.eq(0), top.eq(0)]
            with m.Elif(self.enter):
                m.d.sync += [count.eq(nxt), zero.eq(nxt == 0), one.eq(nxt == 1),
                             top.eq(nxt == MAX_TOKENS)]
            empty.append(pops[q] & zero)
            full.append(pushes[q] & top)
            # left after this instruction: pushed, or popped from more than one, or held
            left.append(pushes[q] | (pops[q] & ~one) | (~pops[q] & ~zero))
        return [(ErrorCode.TOKEN_EMPTY, _any(empty)), (ErrorCode.TOKEN_FULL, _any(full)),
                (ErrorCode.TOKEN_LEFT, finish & _any(left))]


def _any(bits):
    return Cat(*bits).any()
