"""Plots of a sweep (matplotlib, Agg backend: PNG files, no display needed).

- `pareto`: cycles / latency / GOPS against area (DSPs, block RAMs, LUTs or FFs), every
  point of one workload, the Pareto-optimal ones joined and labelled;
- `roofline`: one workload on one config: the compute roof (MACs per cycle x 2 x clock)
  and the bus roof (bus bytes x clock), each accelerator layer at its arithmetic
  intensity (ops per DRAM byte) and achieved GOPS;
- `utilization`: GEMM utilisation per layer (cycle model, and RTL where measured);
- `model_vs_rtl`: the cycle model's cycles against RTL's, per layer and per network.
"""
from __future__ import annotations

from pathlib import Path

from .spec import DseError

AXIS = {"dsp": "DSPs (MULT18X18D)", "bram": "block RAMs (DP16KD)", "lut": "LUTs",
        "ff": "flip-flops", "cycles": "cycles (accelerator)", "latency_ms": "latency (ms)",
        "gops": "GOPS"}


def _plt():
    try:
        import matplotlib
    except ImportError as exc:
        raise DseError("plots must have matplotlib installed (pip install 'vtalab[dse]'), "
                       f"not missing: {exc}") from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def pareto_front(rows: list, x: str, y: str) -> list:
    """The rows no other row beats in both x (less) and y (less; GOPS: more)."""
    sign = -1 if y == "gops" else 1
    ordered = sorted(rows, key=lambda r: (r[x], sign * r[y]))
    front, best = [], None
    for r in ordered:
        if best is None or sign * r[y] < best:
            front.append(r)
            best = sign * r[y]
    return front


def pareto(rows: list, x: str, y: str, path, title: str = "", limit=None) -> Path:
    """``limit``: (value, text) of the board's capacity on the x axis, drawn dashed."""
    plt = _plt()
    pts = [r for r in rows if r.get(x) is not None and r.get(y) is not None]
    if not pts:
        raise DseError(f"the Pareto plot must have rows with {x} and {y}, not none "
                       f"(area.flow too coarse for {x}, or every point failed)")
    front = pareto_front(pts, x, y)
    fig, ax = plt.subplots(figsize=(7.5, 5))
    mpc = [r.get("macs_per_cycle") or 1 for r in pts]
    sc = ax.scatter([r[x] for r in pts], [r[y] for r in pts], c=mpc, cmap="viridis",
                    s=28, alpha=0.8, norm=_lognorm(mpc))
    bar = fig.colorbar(sc, ax=ax, label="MACs per cycle")
    ticks = sorted(set(mpc))
    if len(ticks) <= 10:
        bar.set_ticks(ticks, labels=[str(t) for t in ticks])
        bar.minorticks_off()
    if limit is not None:
        ax.axvline(limit[0], color="gray", ls="--", lw=1, label=limit[1])
    ax.step([r[x] for r in front], [r[y] for r in front], where="post", color="tab:red",
            lw=1.5, label=f"Pareto front ({len(front)} of {len(pts)})")
    ax.scatter([r[x] for r in front], [r[y] for r in front], facecolors="none",
               edgecolors="tab:red", s=80, lw=1.5)
    lo, hi = min(r[x] for r in pts), max(r[x] for r in pts)
    for r in front:                      # labels of the rightmost points go to their left
        right = r[x] > lo + 0.8 * (hi - lo)
        ax.annotate(r["label"], (r[x], r[y]), textcoords="offset points", fontsize=7,
                    xytext=(-6, 4) if right else (5, 4), ha="right" if right else "left")
    ax.set_xlabel(AXIS[x])
    ax.set_ylabel(AXIS[y])
    if max(r[y] for r in pts) > 8 * min(r[y] for r in pts):
        ax.set_yscale("log")
    ax.set_title(title, fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    return _save(fig, plt, path)


def _lognorm(values):
    from matplotlib.colors import LogNorm
    lo, hi = min(values), max(values)
    return LogNorm(lo, hi) if hi > lo else None


def _save(fig, plt, path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def _cycles(layer: dict) -> int | None:
    return layer.get("cycles_rtl") or layer.get("cycles_model")


def roofline(record: dict, path, title: str = "") -> Path:
    plt = _plt()
    cfg = record["config"]
    mpc = cfg["batch"] * cfg["block_in"] * cfg["block_out"]
    peak = 2 * mpc * cfg["clock_mhz"] / 1e3                     # GOPS
    bandwidth = cfg["bus_bits"] / 8 * cfg["clock_mhz"] / 1e3     # GB/s
    layers = [r for r in record["layers"] if r["placement"] == "accel" and _cycles(r)
              and r.get("dram_bytes")]
    if not layers:
        raise DseError(f"the roofline must have accelerator layers with cycles, not none "
                       f"({record['label']}, {record['workload']})")
    ai = [2 * r["macs"] / r["dram_bytes"] for r in layers]
    gops = [2 * r["macs"] / (_cycles(r) / (cfg["clock_mhz"] * 1e6)) / 1e9 for r in layers]
    fig, ax = plt.subplots(figsize=(7.5, 5))
    lo, hi = min(ai + [peak / bandwidth]) / 4, max(ai + [peak / bandwidth]) * 4
    xs = [lo * (hi / lo) ** (k / 200) for k in range(201)]
    ax.plot(xs, [min(peak, bandwidth * v) for v in xs], color="black", lw=1.5,
            label=f"roof: {peak:.1f} GOPS, {bandwidth:.2f} GB/s")
    ax.scatter(ai, gops, color="tab:blue", s=30, zorder=3, label="layers")
    # name the layers furthest below their roof (the ones worth a look), at most six
    gap = sorted(zip([g / min(peak, bandwidth * a) for a, g in zip(ai, gops)],
                     range(len(layers))))
    for eff, i in gap[:6]:
        if eff < 0.85:
            ax.annotate(f"{layers[i]['name']} ({eff:.0%})", (ai[i], gops[i]),
                        textcoords="offset points", xytext=(4, -9), fontsize=7)
    m = record["metrics"]
    if m.get("ops_per_dram_byte") and m.get("gops"):
        ax.scatter([m["ops_per_dram_byte"]], [m["gops"]], marker="*", s=160,
                   color="tab:red", zorder=4, label=f"network: {m['gops']:.2f} GOPS")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("arithmetic intensity (ops per DRAM byte)")
    ax.set_ylabel("GOPS")
    ax.set_title(title, fontsize=10)
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=8)
    return _save(fig, plt, path)


def utilization(record: dict, path, title: str = "") -> Path:
    plt = _plt()
    cfg = record["config"]
    mpc = cfg["batch"] * cfg["block_in"] * cfg["block_out"]
    layers = [r for r in record["layers"] if r["placement"] == "accel"]
    if not layers:
        raise DseError(f"the utilisation plot must have accelerator layers, not none "
                       f"({record['label']}, {record['workload']})")
    xs = list(range(len(layers)))
    fig, ax = plt.subplots(figsize=(max(6.0, 0.35 * len(layers) + 2), 4.5))
    width = 0.4 if any(r.get("cycles_rtl") for r in layers) else 0.8
    model = [r["macs"] / mpc / r["cycles_model"] if r.get("cycles_model") else 0
             for r in layers]
    ax.bar([x - (width / 2 if width < 0.8 else 0) for x in xs], model, width,
           label="cycle model", color="tab:blue")
    if width < 0.8:
        rtl = [r["macs"] / mpc / r["cycles_rtl"] if r.get("cycles_rtl") else 0
               for r in layers]
        ax.bar([x + width / 2 for x in xs], rtl, width, label="RTL", color="tab:orange")
    names = [f"{r['name']}: {(r.get('what') or '').replace('conv ', '')}" for r in layers]
    ax.set_xticks(xs, names, rotation=60, ha="right", fontsize=7)
    ax.set_ylabel("GEMM utilisation")
    ax.set_ylim(0, 1.05)
    if record["metrics"].get("utilization") is not None:
        ax.axhline(record["metrics"]["utilization"], color="tab:red", ls="--", lw=1,
                   label=f"network {record['metrics']['utilization']:.0%}")
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=8)
    return _save(fig, plt, path)


def model_vs_rtl(records: list, path, title: str = "") -> Path:
    """Left: model cycles against RTL cycles; right: the relative error against size."""
    plt = _plt()
    layer_pts = [(r["cycles_rtl"], r["cycles_model"]) for rec in records
                 for r in rec["layers"] if r.get("cycles_rtl") and r.get("cycles_model")]
    nets = [(rec["metrics"]["cycles"], rec["metrics"]["cycles_model"]) for rec in records]
    if not nets:
        raise DseError("the model-vs-RTL plot must have records measured on RTL, not none")
    fig, (ax, err) = plt.subplots(1, 2, figsize=(11, 4.8))
    for pts, style in ((layer_pts, dict(s=12, alpha=0.6, label="layers")),
                       (nets, dict(s=70, marker="*", color="tab:red", label="networks"))):
        if pts:
            ax.scatter(*zip(*pts), **style)
            err.scatter([r for r, _ in pts], [100 * (m - r) / r for r, m in pts], **style)
    allv = [v for p in layer_pts + nets for v in p]
    lo, hi = min(allv) / 1.5, max(allv) * 1.5
    ax.plot([lo, hi], [lo, hi], color="black", lw=1, label="model = RTL")
    err.axhline(0, color="black", lw=1)
    for a in (ax, err):
        a.set_xscale("log")
        a.set_xlabel("RTL cycles")
        a.grid(alpha=0.3, which="both")
        a.legend(fontsize=8)
    ax.set_yscale("log")
    ax.set_ylabel("cycle model")
    err.set_ylabel("model error (%)")
    ax.set_title(title, fontsize=10)
    err.set_title("(model - RTL) / RTL", fontsize=10)
    return _save(fig, plt, path)
