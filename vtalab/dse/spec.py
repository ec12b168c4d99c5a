"""The sweep spec: a TOML file read and checked into a `DseSpec`.

    spec = load_spec("sweep.toml")        # DseError naming the key, the value and the limit

A spec names a base config, the Config fields to sweep, the workloads, the metrics, the
area flow and board, constraints, the search strategy and its budget (docs/dse.md has an
annotated example). Everything is checked here, before any point runs; a value that only
some points make invalid (``block_in = 3``, ``acc_depth`` above a 16-bit field) is not a
spec error: that point is reported with its ConfigError.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path

from vtalab.spec import Config, load_config
from vtalab.spec.errors import VtaError

STRATEGIES = ("grid", "random", "xgb")
OBJECTIVES = ("cycles", "latency", "area_delay")
CYCLE_SOURCES = ("model", "rtl")
AREA_FLOWS = ("estimate", "synth", "pnr")
PARETO_X = ("dsp", "bram", "lut", "ff")
PARETO_Y = ("cycles", "latency_ms", "gops")
MAX_GRID = 100_000
SECTIONS = {"name", "base", "sweep", "search", "workload", "metrics", "area", "constraints",
            "report"}
KEYS = {
    "base": {"config"},
    "search": {"strategy", "budget", "seed", "batch", "objective"},
    "metrics": {"cycles", "rtl_sample", "check", "tuning_log", "timeout_s"},
    "area": {"flow", "board"},
    "constraints": {"fits_board", "max_dsp", "max_bram"},
    "report": {"x", "y", "workload"},
}


class DseError(VtaError, ValueError):
    """A sweep spec, a point or a results file is not what the sweep needs."""


def sweepable() -> list[str]:
    """Config fields a sweep may vary: every hardware parameter."""
    return [f.name for f in dataclasses.fields(Config) if f.name != "name"]


@dataclass(frozen=True)
class Workload:
    name: str
    kind: str                 # "model" | "conv" | "dense" | "onnx"
    args: dict                # the definition (JSON values), part of the workload's key
    path: str | None = None   # onnx file
    calibrate: str | None = None

    @property
    def key(self) -> str:
        """Name plus a digest of the definition: a changed workload never resumes."""
        text = json.dumps(self.args, sort_keys=True)
        return f"{self.name}#{hashlib.sha256(text.encode()).hexdigest()[:8]}"


@dataclass
class DseSpec:
    base: Config
    sweep: dict                               # field -> list of values, in spec order
    workloads: list
    strategy: str = "grid"
    budget: int = 64
    seed: int = 0
    batch: int = 4
    objective: str = "cycles"
    cycles: str = "model"
    rtl_sample: int = 0
    check: bool = True
    tuning_log: str | None = None
    timeout_s: float | None = None
    area_flow: str = "estimate"
    board: str = "ulx3s-85f"
    constraints: dict = field(default_factory=dict)
    report: dict = field(default_factory=dict)
    name: str = "dse"
    path: str | None = None

    @property
    def grid_size(self) -> int:
        size = 1
        for values in self.sweep.values():
            size *= len(values)
        return size

    def digest(self) -> str:
        data = {k: v for k, v in dataclasses.asdict(self).items() if k not in ("path",)}
        data["base"] = self.base.to_dict()
        return hashlib.sha256(json.dumps(data, sort_keys=True, default=str).encode()
                              ).hexdigest()[:16]


def _toml(path: Path) -> dict:
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        import tomli as tomllib
    try:
        return tomllib.loads(path.read_text())
    except OSError as exc:
        raise DseError(f"spec must be a readable TOML file, not {path} ({exc})") from None
    except ValueError as exc:
        raise DseError(f"spec {path} must be valid TOML, not: {exc}") from None


def load_spec(path) -> DseSpec:
    path = Path(path)
    spec = parse_spec(_toml(path), path.parent, str(path))
    spec.path = str(path)
    return spec


def _check(ok: bool, key: str, expected: str, actual) -> None:
    if not ok:
        raise DseError(f"{key} must be {expected}, not {actual!r}")


def _int(value, key: str, lo: int = 0, hi: int | None = None) -> int:
    ok = isinstance(value, int) and not isinstance(value, bool) and value >= lo \
        and (hi is None or value <= hi)
    _check(ok, key, f"an integer from {lo}" + (f" to {hi}" if hi is not None else ""), value)
    return value


def _choice(value, key: str, allowed) -> str:
    _check(value in allowed, key, f"one of {list(allowed)}", value)
    return value


def _table(raw: dict, section: str) -> dict:
    value = raw.get(section, {})
    _check(isinstance(value, dict), section, "a table", value)
    unknown = sorted(set(value) - KEYS[section])
    _check(not unknown, f"{section}.{unknown[0] if unknown else ''}",
           f"one of the keys {sorted(KEYS[section])}", unknown[0] if unknown else None)
    return value


def parse_spec(raw: dict, root: Path = Path("."), where: str = "spec") -> DseSpec:
    """A DseSpec from the TOML data; relative paths are relative to ``root``."""
    try:
        return _parse(raw, Path(root))
    except DseError as exc:
        raise DseError(f"{where}: {exc}") from None


def _parse(raw: dict, root: Path) -> DseSpec:
    unknown = sorted(set(raw) - SECTIONS)
    _check(not unknown, unknown[0] if unknown else "", f"one of the sections {sorted(SECTIONS)}",
           unknown[0] if unknown else None)
    base = _table(raw, "base")
    spec = DseSpec(base=_base(base.get("config", "default"), root), sweep=_sweep(raw),
                   workloads=_workloads(raw.get("workload"), root))
    spec.name = raw.get("name", "dse")
    _check(isinstance(spec.name, str) and spec.name, "name", "a non-empty string", spec.name)
    _search(_table(raw, "search"), spec)
    _metrics(_table(raw, "metrics"), spec, root)
    _area(_table(raw, "area"), spec)
    spec.constraints = _constraints(_table(raw, "constraints"))
    spec.report = _report(_table(raw, "report"), spec)
    return spec


def _base(source, root: Path) -> Config:
    _check(isinstance(source, str), "base.config", "a preset name or a config file", source)
    candidate = root / source
    try:
        return load_config(str(candidate) if candidate.is_file() else source)
    except VtaError as exc:
        raise DseError(f"base.config: {exc}") from None


def _sweep(raw: dict) -> dict:
    table = raw.get("sweep", {})
    _check(isinstance(table, dict) and table, "sweep", "a table of Config fields with "
           "lists of values", table)
    out = {}
    for key, values in table.items():
        _check(key in sweepable(), f"sweep.{key}", f"one of the Config fields {sweepable()}",
               key)
        _check(isinstance(values, list) and values, f"sweep.{key}", "a non-empty list",
               values)
        number = (int, float) if key == "clock_mhz" else (int,)
        for v in values:
            _check(isinstance(v, number) and not isinstance(v, bool), f"sweep.{key}",
                   "a list of " + ("numbers" if key == "clock_mhz" else "integers"), v)
        _check(len(set(values)) == len(values), f"sweep.{key}", "a list without repeats",
               values)
        out[key] = list(values)
    return out


MODELS = ("resnet18", "mobilenet", "mlp")
KINDS = ("model", "conv", "dense", "onnx")


def _workloads(items, root: Path) -> list:
    _check(isinstance(items, list) and items, "workload",
           "one or more [[workload]] tables", items)
    out, names = [], set()
    for n, item in enumerate(items):
        key = f"workload[{n}]"
        _check(isinstance(item, dict), key, "a table", item)
        kinds = [k for k in KINDS if k in item]
        _check(len(kinds) == 1, key, f"a table with exactly one of {list(KINDS)}",
               sorted(item))
        allowed = {kinds[0], "name", "batch", "input_size", "calibrate"}
        extra = sorted(set(item) - allowed)
        _check(not extra, f"{key}.{extra[0] if extra else ''}",
               f"one of the keys {sorted(allowed)}", extra[0] if extra else None)
        wl = _workload(kinds[0], item, key, root)
        _check(wl.name not in names, f"{key}.name", "unique among the workloads", wl.name)
        names.add(wl.name)
        out.append(wl)
    return out


def _workload(kind: str, item: dict, key: str, root: Path) -> Workload:
    batch = _int(item.get("batch", 1), f"{key}.batch", 1, 256)
    args = {"kind": kind, "batch": batch}
    path = calibrate = None
    if kind == "model":
        args["model"] = _choice(item["model"], f"{key}.model", MODELS)
        args["input_size"] = _int(item.get("input_size", 224), f"{key}.input_size", 32, 1024)
        default = f"{args['model']}@{args['input_size']}"
    elif kind in ("conv", "dense"):
        want = 7 if kind == "conv" else 2
        value = item[kind]
        what = ("[channels, height, width, filters, kernel, stride, pad]" if kind == "conv"
                else "[in_features, out_features]")
        _check(isinstance(value, list) and len(value) == want
               and all(isinstance(v, int) and not isinstance(v, bool) and v >= 0
                       for v in value) and all(value[:want - 1 if kind == "conv" else 2]),
               f"{key}.{kind}", f"{what} of non-negative integers (pad may be 0)", value)
        if kind == "conv":
            _check(value[6] < value[4], f"{key}.conv", "pad below the kernel size", value)
        args[kind] = value
        default = f"{kind}{'x'.join(map(str, value))}"
    else:
        file = root / str(item["onnx"])
        _check(file.is_file(), f"{key}.onnx", "an existing ONNX file", str(file))
        path, args["sha256"] = str(file), hashlib.sha256(file.read_bytes()).hexdigest()[:16]
        default = file.stem
    if "calibrate" in item:
        cal = root / str(item["calibrate"])
        _check(cal.is_file(), f"{key}.calibrate", "an existing .npy file", str(cal))
        calibrate, args["calibrate"] = str(cal), cal.name
    name = item.get("name", default)
    _check(isinstance(name, str) and name and "," not in name, f"{key}.name",
           "a non-empty string without commas", name)
    return Workload(name, kind, args, path, calibrate)


def _search(table: dict, spec: DseSpec) -> None:
    spec.strategy = _choice(table.get("strategy", "grid"), "search.strategy", STRATEGIES)
    spec.budget = _int(table.get("budget", 64), "search.budget", 1)
    spec.seed = _int(table.get("seed", 0), "search.seed", 0)
    spec.batch = _int(table.get("batch", 4), "search.batch", 1, 1024)
    spec.objective = _choice(table.get("objective", "cycles"), "search.objective", OBJECTIVES)
    if spec.strategy == "grid":
        _check(spec.grid_size <= MAX_GRID, "sweep", f"a grid of at most {MAX_GRID} points "
               f"(use search.strategy = \"random\" or \"xgb\")", spec.grid_size)


def _metrics(table: dict, spec: DseSpec, root: Path) -> None:
    spec.cycles = _choice(table.get("cycles", "model"), "metrics.cycles", CYCLE_SOURCES)
    spec.rtl_sample = _int(table.get("rtl_sample", 0), "metrics.rtl_sample", 0, spec.budget)
    check = table.get("check", True)
    _check(isinstance(check, bool), "metrics.check", "true or false", check)
    spec.check = check
    log = table.get("tuning_log")
    if log is not None:
        file = root / str(log)
        _check(file.is_file(), "metrics.tuning_log", "an existing tuning log", str(file))
        spec.tuning_log = str(file)
    timeout = table.get("timeout_s")
    if timeout is not None:
        _check(isinstance(timeout, (int, float)) and not isinstance(timeout, bool)
               and timeout > 0, "metrics.timeout_s", "a positive number of seconds", timeout)
        spec.timeout_s = float(timeout)


def _area(table: dict, spec: DseSpec) -> None:
    from vtalab.fpga.boards import BOARDS
    spec.area_flow = _choice(table.get("flow", "estimate"), "area.flow", AREA_FLOWS)
    spec.board = _choice(table.get("board", "ulx3s-85f"), "area.board", sorted(BOARDS))
    if spec.area_flow != "estimate":
        _check(BOARDS[spec.board].open_flow, "area.board",
               "an open-flow (ECP5) board for synth/pnr", spec.board)


def _constraints(table: dict) -> dict:
    out = {}
    fits = table.get("fits_board", False)
    _check(isinstance(fits, bool), "constraints.fits_board", "true or false", fits)
    out["fits_board"] = fits
    for key in ("max_dsp", "max_bram"):
        if key in table:
            out[key] = _int(table[key], f"constraints.{key}", 1)
    return out


def _report(table: dict, spec: DseSpec) -> dict:
    x = _choice(table.get("x", "dsp"), "report.x", PARETO_X)
    if x in ("lut", "ff"):
        _check(spec.area_flow != "estimate", "report.x",
               "dsp or bram with area.flow = \"estimate\" (LUTs/FFs need synth or pnr)", x)
    y = _choice(table.get("y", "cycles"), "report.y", PARETO_Y)
    names = [w.name for w in spec.workloads]
    wl = _choice(table.get("workload", names[0]), "report.workload", names)
    return {"x": x, "y": y, "workload": wl}
