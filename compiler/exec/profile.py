"""Per-layer profile of a module run: placement, MACs, cycles or op counts, GEMM
utilisation (when the backend counts cycles), bytes moved and wall time."""
from __future__ import annotations

from dataclasses import dataclass, field

from vtalab.spec import Config

DRAM_KEYS = ("bytes_uop", "bytes_inp", "bytes_wgt", "bytes_acc", "bytes_out", "bytes_insn")


@dataclass
class StepRecord:
    name: str
    op: str
    placement: str                 # "accel", "cpu/llvm", "cpu/numpy"
    macs: int = 0
    counters: dict = field(default_factory=dict)
    info: dict = field(default_factory=dict)
    seconds: float = 0.0
    host_bytes: int = 0            # bytes copied between host and device DRAM

    @property
    def cycles(self) -> int | None:
        return self.counters.get("cycles")

    @property
    def dram_bytes(self) -> int:
        return sum(self.counters.get(k, 0) for k in DRAM_KEYS)

    def utilization(self, cfg: Config) -> float | None:
        """Ideal GEMM cycles (the layer's MACs / MACs per cycle) over measured cycles. The
        layer's MACs, not the array's: work the array does besides (a residual accumulated
        by an identity GEMM) is overhead, not utilisation."""
        if not self.cycles:
            return None
        return self.macs / cfg.macs_per_cycle / self.cycles


@dataclass
class Profile:
    cfg: Config
    backend: str
    records: list = field(default_factory=list)
    seconds: float = 0.0

    def add(self, record: StepRecord) -> None:
        self.records.append(record)

    @property
    def accel(self) -> list:
        return [r for r in self.records if r.placement == "accel"]

    def totals(self) -> dict:
        accel = self.accel
        cycles = [r.cycles for r in accel if r.cycles]
        out = {"backend": self.backend, "steps": len(self.records), "accel_steps": len(accel),
               "macs": sum(r.macs for r in self.records),
               "accel_macs": sum(r.macs for r in accel),
               "array_macs": sum(r.counters.get("macs", 0) for r in accel),
               "accel_seconds": sum(r.seconds for r in accel),
               "cpu_seconds": sum(r.seconds for r in self.records if r.placement != "accel"),
               "dram_bytes": sum(r.dram_bytes for r in self.records),
               "host_bytes": sum(r.host_bytes for r in self.records),
               "seconds": self.seconds}
        if cycles and len(cycles) == len(accel):
            out["accel_cycles"] = sum(cycles)
            out["gemm_utilization"] = out["accel_macs"] / self.cfg.macs_per_cycle / sum(cycles)
        return out

    def to_dict(self) -> dict:
        rows = [{"name": r.name, "op": r.op, "placement": r.placement, "macs": r.macs,
                 "cycles": r.cycles, "utilization": r.utilization(self.cfg),
                 "dram_bytes": r.dram_bytes, "host_bytes": r.host_bytes,
                 "seconds": r.seconds, "gemm_uops": r.counters.get("gemm_uops"),
                 "alu_uops": r.counters.get("alu_uops"), "what": r.info.get("what"),
                 "knobs": r.info.get("knobs")} for r in self.records]
        return {"totals": self.totals(), "layers": rows}

    def table(self, cpu_detail: bool = True) -> str:
        has_cycles = any(r.cycles for r in self.accel)
        work = "cycles" if has_cycles else "GEMM/ALU uops"
        head = (f"{'#':>3} {'layer':<20} {'op':<16} {'place':<9} {'MACs':>12} {work:>15} "
                f"{'util':>6} {'DRAM B':>11} {'host B':>10} {'ms':>8}")
        lines = [head, "-" * len(head)]
        for i, r in enumerate(self.records):
            if not cpu_detail and r.placement != "accel" and not r.macs:
                continue
            if r.placement == "accel":
                count = f"{r.cycles:,}" if has_cycles and r.cycles else \
                    f"{r.counters.get('gemm_uops', 0):,}/{r.counters.get('alu_uops', 0):,}"
            else:
                count = "-"
            util = r.utilization(self.cfg)
            lines.append(f"{i:>3} {r.name[:20]:<20} {r.op[:16]:<16} {r.placement:<9} "
                         f"{r.macs:>12,} {count:>15} "
                         f"{'-' if util is None else f'{util:.0%}':>6} {r.dram_bytes:>11,} "
                         f"{r.host_bytes:>10,} {r.seconds * 1e3:>8.2f}")
        lines.append("-" * len(head))
        lines.append(self.summary())
        return "\n".join(lines)

    def summary(self) -> str:
        t = self.totals()
        share = t["accel_macs"] / t["macs"] if t["macs"] else 0.0
        text = (f"{t['steps']} steps ({t['accel_steps']} on the accelerator, {share:.1%} of "
                f"{t['macs']:,} MACs) on {self.backend}: {t['seconds'] * 1e3:.1f} ms "
                f"(accelerator {t['accel_seconds'] * 1e3:.1f} ms, CPU "
                f"{t['cpu_seconds'] * 1e3:.1f} ms); DRAM traffic {t['dram_bytes']:,} B, "
                f"host copies {t['host_bytes']:,} B")
        if "accel_cycles" in t:
            text += (f"; {t['accel_cycles']:,} accelerator cycles, GEMM utilisation "
                     f"{t['gemm_utilization']:.1%}")
        return text
