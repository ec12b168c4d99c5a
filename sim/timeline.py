"""Per-instruction timeline of an RTL run: Chrome/Perfetto trace JSON and a Gantt PNG.

The native harness records, for each of the load, compute and store modules, every
instruction's first busy cycle (``start``), the cycle its tokens were there and it began
to work (``run``) and its last busy cycle + 1 (``end``). Modules run their instructions in
program order, so the k-th event of a module is the module's k-th instruction.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from vtalab.spec import Config
from vtalab.spec.errors import SimError
from vtalab.spec.isa import AluInsn, GemmInsn, MemInsn, module_of

MODULES = ("load", "compute", "store")
COLOURS = {"LOAD INP": "#4C72B0", "LOAD WGT": "#55A868", "LOAD UOP": "#8172B2",
           "LOAD ACC": "#937860", "GEMM": "#C44E52", "ALU": "#DD8452", "STORE OUT": "#64B5CD",
           "FINISH": "#333333", "?": "#999999"}
WAIT_COLOUR = "#DDDDDD"


@dataclass(frozen=True)
class Event:
    module: str
    index: int          # position in the program (-1 if the program was not decodable)
    label: str          # "GEMM", "LOAD INP", ...
    start: int          # cycles from START
    run: int            # tokens popped: the instruction works from here
    end: int

    @property
    def waited(self) -> int:
        return self.run - self.start


def label_of(insn) -> str:
    if isinstance(insn, MemInsn):
        return f"{insn.opcode.name} {insn.mem.name}"
    if isinstance(insn, GemmInsn):
        return "GEMM"
    if isinstance(insn, AluInsn):
        return "ALU"
    return "FINISH" if insn is not None else "?"


@dataclass
class Timeline:
    cfg: Config
    events: list[Event]

    @classmethod
    def from_events(cls, cfg: Config, rows: np.ndarray, insns=None) -> "Timeline":
        orders = {m: [] for m in MODULES}
        for k, insn in enumerate(insns or []):
            orders[module_of(insn)].append(k)
        seen = dict.fromkeys(MODULES, 0)
        events = []
        for module_id, start, run, end in np.asarray(rows, dtype=np.int64).tolist():
            module = MODULES[module_id]
            nth = seen[module]
            seen[module] += 1
            index = orders[module][nth] if nth < len(orders[module]) else -1
            label = label_of(insns[index]) if index >= 0 else "?"
            events.append(Event(module, index, label, start, run, end))
        return cls(cfg, events)

    @property
    def cycles(self) -> int:
        return max((e.end for e in self.events), default=0)

    def busy(self, module: str) -> int:
        return sum(e.end - e.run for e in self.events if e.module == module)

    def overlap(self) -> int:
        """Cycles in which the load module worked while compute ran a GEMM: the DAE win."""
        def mask(pred):
            bits = np.zeros(self.cycles + 1, dtype=bool)
            for e in self.events:
                if pred(e):
                    bits[e.run:e.end] = True
            return bits
        return int(np.count_nonzero(mask(lambda e: e.module == "load")
                                    & mask(lambda e: e.label == "GEMM")))

    # ---- Chrome / Perfetto trace --------------------------------------------------------
    def chrome_trace(self) -> dict:
        """Trace Event Format: one thread per module; times in microseconds at the clock."""
        us = 1.0 / self.cfg.clock_mhz
        out = [{"ph": "M", "name": "process_name", "pid": 0, "args": {"name": "vtalab core"}}]
        for tid, module in enumerate(MODULES):
            out.append({"ph": "M", "name": "thread_name", "pid": 0, "tid": tid,
                        "args": {"name": module}})
        for e in self.events:
            tid = MODULES.index(e.module)
            if e.waited:
                out.append({"ph": "X", "name": "wait tokens", "cat": "wait", "pid": 0,
                            "tid": tid, "ts": e.start * us, "dur": e.waited * us})
            out.append({"ph": "X", "name": e.label, "cat": e.module, "pid": 0, "tid": tid,
                        "ts": e.run * us, "dur": (e.end - e.run) * us,
                        "args": {"insn": e.index, "start_cycle": e.start, "run_cycle": e.run,
                                 "end_cycle": e.end}})
        return {"traceEvents": out, "displayTimeUnit": "ns"}

    def save_trace(self, path) -> Path:
        path = Path(path)
        path.write_text(json.dumps(self.chrome_trace()))
        return path

    # ---- Gantt chart ------------------------------------------------------------------------
    def plot(self, path, title: str | None = None, window: tuple[int, int] | None = None) -> Path:
        """Draw one lane per module (grey: waiting for tokens) into a PNG."""
        plt = _pyplot()
        lo, hi = window or (0, self.cycles)
        fig, ax = plt.subplots(figsize=(12, 3.2), dpi=110)
        for lane, module in enumerate(reversed(MODULES)):
            for e in self.events:
                if e.module != module or e.end < lo or e.start > hi:
                    continue
                if e.waited:
                    ax.broken_barh([(e.start, e.waited)], (lane - 0.3, 0.6), color=WAIT_COLOUR)
                ax.broken_barh([(e.run, max(e.end - e.run, 1))], (lane - 0.35, 0.7),
                               color=COLOURS.get(e.label, COLOURS["?"]), linewidth=0)
        ax.set_yticks(range(len(MODULES)), list(reversed(MODULES)))
        ax.set_xlim(lo, hi)
        ax.set_xlabel("cycle")
        used = sorted({e.label for e in self.events}, key=list(COLOURS).index)
        handles = [plt.Rectangle((0, 0), 1, 1, color=COLOURS[k]) for k in used]
        handles.append(plt.Rectangle((0, 0), 1, 1, color=WAIT_COLOUR))
        ax.legend(handles, used + ["wait tokens"], loc="upper center", ncol=len(handles),
                  fontsize=7, bbox_to_anchor=(0.5, -0.28), frameon=False)
        ax.set_title(title or f"{self.cfg.name}: {self.cycles} cycles", fontsize=10)
        fig.tight_layout()
        fig.savefig(path)
        plt.close(fig)
        return Path(path)


def _pyplot():
    try:
        import matplotlib
    except ImportError:
        raise SimError("the timeline plot needs matplotlib (pip install 'vtalab[plot]'), "
                       "not a missing module") from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt
