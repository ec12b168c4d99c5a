"""One-file storage of a module (.vtl): a zip with a JSON manifest, arrays and programs.

    manifest.json         format name + version, the Config (and its fingerprint), values,
                          arena offsets, steps (CPU nodes with encoded attributes,
                          accelerator kernels' relocations and bindings), reports
    arrays/<k>.npy        constants and array attributes
    kernels/<k>.bin       encoded 128-bit instruction streams (buffer-relative addresses)
    kernels/<k>.uop.npy   micro-op images

Writes are atomic (a temporary file in the same folder, then a rename). Loading checks the
format, the version and the config fingerprint, and that every entry is present.
"""
from __future__ import annotations

import io
import json
import os
import tempfile
import zipfile
from pathlib import Path

import numpy as np

from vtalab.spec import Config
from vtalab.spec.errors import VtaError

from ..graph.ir import Node, TensorType
from vtalab.runtime.program import Program
from .module import FORMAT_VERSION, Module, Step

FORMAT = "vtalab-module"


class ModuleFileError(VtaError, ValueError):
    """A module file is not a readable vtalab module of this version and config."""


class _Arrays:
    def __init__(self):
        self.items: list[np.ndarray] = []

    def add(self, array) -> int:
        self.items.append(np.ascontiguousarray(array))
        return len(self.items) - 1


def _encode(value, arrays: _Arrays):
    if isinstance(value, np.ndarray):
        return {"__array__": arrays.add(value)}
    if isinstance(value, Node):
        return {"__node__": _encode_node(value, arrays)}
    if isinstance(value, (tuple, list)):
        return {"__tuple__": [_encode(v, arrays) for v in value]}
    if isinstance(value, (np.integer, np.floating)):
        return value.item()
    return value


def _decode(value, arrays: list):
    if isinstance(value, dict):
        if "__array__" in value:
            return arrays[value["__array__"]]
        if "__node__" in value:
            return _decode_node(value["__node__"], arrays)
        if "__tuple__" in value:
            return tuple(_decode(v, arrays) for v in value["__tuple__"])
    return value


def _encode_node(node: Node, arrays: _Arrays) -> dict:
    return {"name": node.name, "op": node.op, "inputs": list(node.inputs),
            "outputs": list(node.outputs),
            "attrs": {k: _encode(v, arrays) for k, v in node.attrs.items()}}


def _decode_node(data: dict, arrays: list) -> Node:
    return Node(data["name"], data["op"], tuple(data["inputs"]), tuple(data["outputs"]),
                {k: _decode(v, arrays) for k, v in data["attrs"].items()})


def _step_manifest(step: Step, k: int | None, arrays: _Arrays) -> dict:
    data = {"name": step.name, "op": step.op, "target": step.target,
            "inputs": list(step.inputs), "outputs": list(step.outputs), "reason": step.reason,
            "info": step.info}
    if step.node is not None:
        data["node"] = _encode_node(step.node, arrays)
    if step.kernel is not None:
        data.update(kernel=k, kernel_manifest=step.kernel.manifest(),
                    bindings={p: list(b) for p, b in step.bindings.items()},
                    widen=list(step.widen) if step.widen else None)
    return data


def _npy(array) -> bytes:
    buf = io.BytesIO()
    np.save(buf, np.ascontiguousarray(array), allow_pickle=False)
    return buf.getvalue()


def save_module(module: Module, path) -> Path:
    """Write `module` to `path` atomically; returns the path."""
    path = Path(path)
    arrays = _Arrays()
    const_ids = {name: arrays.add(a) for name, a in module.consts.items()}
    steps, kernels = [], []
    for step in module.steps:
        k = None
        if step.kernel is not None:
            k = len(kernels)
            kernels.append(step.kernel)
        steps.append(_step_manifest(step, k, arrays))
    manifest = {"format": FORMAT, "version": FORMAT_VERSION, "config": module.cfg.to_dict(),
                "fingerprint": module.cfg.fingerprint(), "name": module.name,
                "inputs": list(module.inputs), "outputs": list(module.outputs),
                "types": {v: [list(t.shape), t.dtype] for v, t in module.types.items()},
                "offsets": module.offsets, "arena_bytes": module.arena_bytes,
                "consts": const_ids, "arrays": len(arrays.items), "kernels": len(kernels),
                "steps": steps, "report": module.report, "stats": module.stats}
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as raw, zipfile.ZipFile(raw, "w", zipfile.ZIP_DEFLATED) as z:
            z.writestr("manifest.json", json.dumps(manifest, default=_json_default))
            for i, a in enumerate(arrays.items):
                z.writestr(f"arrays/{i}.npy", _npy(a))
            for i, kernel in enumerate(kernels):
                z.writestr(f"kernels/{i}.bin", kernel.code)
                z.writestr(f"kernels/{i}.uop.npy", _npy(kernel.uop_words))
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def _json_default(value):
    if isinstance(value, (np.integer, np.floating)):
        return value.item()
    raise TypeError(f"{type(value).__name__} is not JSON serialisable")


def load_module(path, config: Config | str | None = None) -> Module:
    """Read a module file; `config` (optional) must match the one it was compiled for."""
    path = Path(path)
    try:
        with zipfile.ZipFile(path) as z:
            manifest = json.loads(z.read("manifest.json"))
            _check_manifest(manifest, path, config)
            arrays = [np.load(io.BytesIO(z.read(f"arrays/{i}.npy")), allow_pickle=False)
                      for i in range(manifest["arrays"])]
            kernels = [(z.read(f"kernels/{i}.bin"),
                        np.load(io.BytesIO(z.read(f"kernels/{i}.uop.npy"))))
                       for i in range(manifest["kernels"])]
    except FileNotFoundError:
        raise ModuleFileError(f"module file must exist, not missing {str(path)!r}") from None
    except (zipfile.BadZipFile, KeyError, json.JSONDecodeError, ValueError, EOFError) as exc:
        if isinstance(exc, VtaError):
            raise
        raise ModuleFileError(f"module file {str(path)!r} must be a complete vtalab module, "
                              f"not unreadable ({type(exc).__name__}: {exc})") from None
    return _module_from(manifest, arrays, kernels)


def _check_manifest(manifest: dict, path: Path, config) -> None:
    if manifest.get("format") != FORMAT:
        raise ModuleFileError(f"format of {str(path)!r} must be {FORMAT!r}, "
                              f"not {manifest.get('format')!r}")
    if manifest.get("version") != FORMAT_VERSION:
        raise ModuleFileError(f"version of {str(path)!r} must be {FORMAT_VERSION}, not "
                              f"{manifest.get('version')!r} (recompile the model)")
    cfg = Config.from_dict(manifest["config"])
    if cfg.fingerprint() != manifest["fingerprint"]:
        raise ModuleFileError(f"config fingerprint of {str(path)!r} must be "
                              f"{cfg.fingerprint()}, not {manifest['fingerprint']}")
    if config is not None:
        from vtalab.spec import load_config
        want = load_config(config)
        if want.fingerprint() != cfg.fingerprint():
            raise ModuleFileError(f"config of {str(path)!r} must be {want.name} "
                                  f"({want.fingerprint()}), not {cfg.name} "
                                  f"({cfg.fingerprint()}): recompile for this config")


def _module_from(manifest: dict, arrays: list, kernels: list) -> Module:
    cfg = Config.from_dict(manifest["config"])
    steps = []
    for data in manifest["steps"]:
        step = Step(data["name"], data["op"], data["target"], tuple(data["inputs"]),
                    tuple(data["outputs"]), data["reason"], info=data["info"])
        if "node" in data:
            step.node = _decode_node(data["node"], arrays)
        if data.get("kernel") is not None:
            code, uops = kernels[data["kernel"]]
            step.kernel = Program.from_manifest(cfg, data["kernel_manifest"], code, uops)
            step.bindings = {p: tuple(b) for p, b in data["bindings"].items()}
            step.widen = tuple(data["widen"]) if data["widen"] else None
        steps.append(step)
    types = {v: TensorType(tuple(s), d) for v, (s, d) in manifest["types"].items()}
    consts = {name: arrays[i] for name, i in manifest["consts"].items()}
    return Module(cfg, manifest["name"],
                  tuple(manifest["inputs"]), tuple(manifest["outputs"]), types,
                  {v: int(o) for v, o in manifest["offsets"].items()},
                  int(manifest["arena_bytes"]), consts, steps, manifest["report"],
                  dict(manifest["stats"]))
