"""Work-item functions for the executor tests (importable by Dask and pool workers)."""
from __future__ import annotations

import os
import signal
import time


def die_once(item):
    """Kill the worker process the first time a "die" item runs (a marker file says)."""
    kind, value = item
    if kind == "always-die":
        os.kill(os.getpid(), signal.SIGKILL)
    if kind == "die" and not os.path.exists(value):
        open(value, "w").close()
        os.kill(os.getpid(), signal.SIGKILL)
    if kind == "hang":
        time.sleep(value)
    if kind == "raise":
        raise ValueError(f"bad item {value}")
    return item


SPEC = """
name = "t"
[base]
config = "tiny"
[sweep]
block_out = [8, 16]
bus_bits = [64, 128]
{extra_sweep}
[[workload]]
name = "c3"
conv = [8, 8, 8, 16, 3, 1, 1]
[[workload]]
name = "fc"
dense = [16, 16]
[search]
budget = 16
{search}
{more}
"""


def write_spec(folder, extra_sweep: str = "", search: str = "", more: str = ""):
    """A small sweep spec (tiny-derived configs, two one-layer workloads) in ``folder``."""
    from pathlib import Path
    path = Path(folder) / "spec.toml"
    path.write_text(SPEC.format(extra_sweep=extra_sweep, search=search, more=more))
    return path


def evaluate_or_die(item):
    """evaluate_point, but the first attempt at the point with block_out 16 and bus 128
    kills its worker (the marker file is named by $VTALAB_TEST_MARKER)."""
    from vtalab.dse.evaluate import evaluate_point
    marker = os.environ["VTALAB_TEST_MARKER"]
    if item["point"] == {"block_out": 16, "bus_bits": 128} and not os.path.exists(marker):
        open(marker, "w").close()
        os.kill(os.getpid(), signal.SIGKILL)
    return evaluate_point(item)


def stable(records):
    """Records without what differs between runs (times, versions), keyed and sorted."""
    drop = ("time", "timing", "versions")
    out = [{k: v for k, v in r.items() if k not in drop} for r in records]
    return sorted(out, key=lambda r: (r["fingerprint"], r["workload"], r["source"]))
