"""The one hardware configuration: primary parameters in natural units, the rest derived.

A Config is passed by argument everywhere; there is no global "current" config.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path

from .errors import ConfigError
from ._atomic import write_text_atomic

_ALLOWED_BITS = {
    "inp_bits": (8, 16),
    "wgt_bits": (8, 16),
    "acc_bits": (16, 32),
    "out_bits": (8, 16),
}
_BUS_WIDTHS = (64, 128, 256, 512)
_MAX_DEPTH = 1 << 16          # LOAD/STORE sram_base is a 16-bit field
_MAX_BLOCK = 256


def _check_lanes(param: str, value, zero: str, limit_name: str, limit: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or \
            not (value == 0 or (_is_pow2(value) and value <= limit)):
        raise ConfigError(f"{param} must be {zero} or a power of two up to {limit_name} "
                          f"({limit}), not {value!r}")


def _is_pow2(value: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value > 0 \
        and value & (value - 1) == 0


def _log2(value: int) -> int:
    return value.bit_length() - 1


@dataclass(frozen=True)
class Config:
    """Primary parameters of the accelerator (VTA's names where VTA has them)."""

    batch: int = 1
    block_in: int = 16
    block_out: int = 16
    inp_bits: int = 8
    wgt_bits: int = 8
    acc_bits: int = 32
    out_bits: int = 8
    uop_depth: int = 8192
    inp_depth: int = 2048
    wgt_depth: int = 1024
    acc_depth: int = 2048
    out_depth: int = 2048
    bus_bits: int = 64
    clock_mhz: float = 100.0
    #: operand width of the ALU's MUL (0: acc_bits, VTA-compatible). A narrower MUL
    #: multiplies the low alu_mul_bits of each operand read as signed, wrapping the product
    #: to acc_bits: at most 18 bits is one ECP5 MULT18X18D per lane instead of three.
    alu_mul_bits: int = 0
    #: ALU lanes (0: one per accumulator element, VTA's timing). Fewer take an ALU
    #: micro-op's row in batch*block_out / alu_lanes beats, one per cycle: the micro-op
    #: then holds the exec pipe's issue that many cycles (spec/timing.py).
    alu_lanes: int = 0
    #: multipliers of the ALU's MUL (0: one per ALU lane). Fewer take a MUL's row in
    #: batch*block_out / alu_mul_lanes beats.
    alu_mul_lanes: int = 0
    name: str = field(default="custom", compare=False)

    def __post_init__(self):
        for param in ("batch", "block_in", "block_out"):
            value = getattr(self, param)
            if not _is_pow2(value) or value > _MAX_BLOCK:
                raise ConfigError(f"{param} must be a power of two from 1 to {_MAX_BLOCK}, "
                                  f"not {value!r}")
        for param, allowed in _ALLOWED_BITS.items():
            value = getattr(self, param)
            if value not in allowed:
                raise ConfigError(f"{param} must be one of {allowed}, not {value!r}")
        if self.out_bits > self.acc_bits:
            raise ConfigError(f"out_bits must be at most acc_bits ({self.acc_bits}), "
                              f"not {self.out_bits}")
        for param in ("uop_depth", "inp_depth", "wgt_depth", "acc_depth", "out_depth"):
            value = getattr(self, param)
            if not _is_pow2(value) or not 2 <= value <= _MAX_DEPTH:
                raise ConfigError(f"{param} must be a power of two from 2 to {_MAX_DEPTH}, "
                                  f"not {value!r}")
        if self.out_depth != self.acc_depth:
            raise ConfigError(f"out_depth must equal acc_depth ({self.acc_depth}): every "
                              f"GEMM/ALU write mirrors its acc row into out, not {self.out_depth}")
        if self.bus_bits not in _BUS_WIDTHS:
            raise ConfigError(f"bus_bits must be one of {_BUS_WIDTHS}, not {self.bus_bits!r}")
        if not isinstance(self.clock_mhz, (int, float)) or not 0 < self.clock_mhz <= 1000:
            raise ConfigError(f"clock_mhz must be a number in (0, 1000], not {self.clock_mhz!r}")
        mul = self.alu_mul_bits
        if isinstance(mul, bool) or not isinstance(mul, int) or \
                not (mul == 0 or 2 <= mul <= self.acc_bits):
            raise ConfigError(f"alu_mul_bits must be 0 (acc_bits) or from 2 to acc_bits "
                              f"({self.acc_bits}), not {mul!r}")
        _check_lanes("alu_lanes", self.alu_lanes, "0 (one per element)",
                     "batch x block_out", self.batch * self.block_out)
        _check_lanes("alu_mul_lanes", self.alu_mul_lanes, "0 (one per ALU lane)",
                     "the ALU lanes", self.alu_units)
        from .isa import check_config_fits  # late import: isa depends on Config
        check_config_fits(self)

    # ---- derived sizes -------------------------------------------------------------
    @property
    def log_batch(self) -> int:
        return _log2(self.batch)

    @property
    def log_block_in(self) -> int:
        return _log2(self.block_in)

    @property
    def log_block_out(self) -> int:
        return _log2(self.block_out)

    def addr_bits(self, buffer: str) -> int:
        """Index width of an SRAM buffer ("uop", "inp", "wgt", "acc", "out")."""
        return _log2(self.depth(buffer))

    def depth(self, buffer: str) -> int:
        try:
            return getattr(self, f"{buffer}_depth")
        except AttributeError:
            raise ConfigError(f"buffer must be one of uop, inp, wgt, acc, out, "
                              f"not {buffer!r}") from None

    def elem_shape(self, buffer: str) -> tuple[int, ...]:
        """Shape of one buffer entry in elements (uop: one 32-bit word)."""
        return {
            "uop": (1,),
            "inp": (self.batch, self.block_in),
            "wgt": (self.block_out, self.block_in),
            "acc": (self.batch, self.block_out),
            "out": (self.batch, self.block_out),
        }[buffer]

    def elem_bits(self, buffer: str) -> int:
        """Bits of one scalar in a buffer entry."""
        return {"uop": 32, "inp": self.inp_bits, "wgt": self.wgt_bits,
                "acc": self.acc_bits, "out": self.out_bits}[buffer]

    def entry_bytes(self, buffer: str) -> int:
        """Bytes of one buffer entry: the DRAM element a LOAD/STORE moves."""
        count = 1
        for dim in self.elem_shape(buffer):
            count *= dim
        return count * self.elem_bits(buffer) // 8

    def buffer_bytes(self, buffer: str) -> int:
        return self.depth(buffer) * self.entry_bytes(buffer)

    @property
    def bus_bytes(self) -> int:
        return self.bus_bits // 8

    @property
    def macs_per_cycle(self) -> int:
        return self.batch * self.block_in * self.block_out

    @property
    def mul_bits(self) -> int:
        """Operand width of the ALU's MUL (``alu_mul_bits``, or acc_bits when 0)."""
        return self.alu_mul_bits or self.acc_bits

    @property
    def alu_units(self) -> int:
        """ALU lanes (``alu_lanes``, or one per accumulator element when 0)."""
        return self.alu_lanes or self.batch * self.block_out

    @property
    def alu_beats(self) -> int:
        """Cycles an ALU micro-op other than MUL takes its row in, ``alu_units`` each."""
        return self.batch * self.block_out // self.alu_units

    @property
    def mul_lanes(self) -> int:
        """Multipliers of the ALU's MUL (``alu_mul_lanes``, or one per ALU lane when 0)."""
        return self.alu_mul_lanes or self.alu_units

    @property
    def mul_beats(self) -> int:
        """Cycles a MUL micro-op takes to multiply its row, ``mul_lanes`` elements each."""
        return self.batch * self.block_out // self.mul_lanes

    @property
    def shift_bits(self) -> int:
        """Width of the signed shift amount an ALU SHR reads from its operand."""
        return _log2(self.acc_bits)

    # ---- identity and persistence ---------------------------------------------------
    def to_dict(self) -> dict:
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}

    def hardware_dict(self) -> dict:
        """The parameters that shape the hardware (everything but the name)."""
        data = self.to_dict()
        data.pop("name")
        data["clock_mhz"] = float(data["clock_mhz"])
        return data

    def fingerprint(self) -> str:
        """Stable 16-hex-digit digest of the hardware parameters; keys every cache.
        Parameters added later enter it only away from their default, so the configs that
        existed before them keep their fingerprints (and their cached builds)."""
        data = {k: v for k, v in self.hardware_dict().items()
                if k not in _LATER_DEFAULTS or v != _LATER_DEFAULTS[k]}
        text = json.dumps(data, sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    @property
    def config_id(self) -> int:
        """32-bit value of the fingerprint that the hardware's CONFIG_ID register holds."""
        return int(self.fingerprint()[:8], 16)

    def replace(self, **changes) -> "Config":
        unknown = set(changes) - {f.name for f in dataclasses.fields(self)}
        if unknown:
            raise ConfigError(f"config parameter must be one of {_field_names()}, "
                              f"not {sorted(unknown)[0]!r}")
        return dataclasses.replace(self, **changes)

    @classmethod
    def from_dict(cls, data: dict, name: str | None = None) -> "Config":
        if not isinstance(data, dict):
            raise ConfigError(f"config must be a mapping of parameters, not {type(data).__name__}")
        unknown = sorted(set(data) - set(_field_names()))
        if unknown:
            raise ConfigError(f"config parameter must be one of {_field_names()}, "
                              f"not {unknown[0]!r}")
        values = dict(data)
        if name is not None and "name" not in values:
            values["name"] = name
        return cls(**values)

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2) + "\n"

    def to_toml(self) -> str:
        lines = []
        for key, value in self.to_dict().items():
            lines.append(f"{key} = {json.dumps(value)}")
        return "\n".join(lines) + "\n"

    def save(self, path: str | os.PathLike) -> None:
        """Write JSON or TOML (by suffix) atomically."""
        path = Path(path)
        text = self.to_toml() if path.suffix == ".toml" else self.to_json()
        write_text_atomic(path, text)

    def summary(self) -> str:
        lines = [f"config {self.name} (fingerprint {self.fingerprint()})"]
        for key, value in self.hardware_dict().items():
            lines.append(f"  {key:<10} {value}")
        lines.append(f"  {'macs/cycle':<10} {self.macs_per_cycle}")
        for buf in ("uop", "inp", "wgt", "acc", "out"):
            lines.append(f"  {buf + ' sram':<10} {self.depth(buf)} x {self.entry_bytes(buf)} B"
                         f" = {self.buffer_bytes(buf) // 1024} KiB")
        return "\n".join(lines)


#: parameters added after the first fingerprints, with their defaults
_LATER_DEFAULTS = {"alu_mul_bits": 0, "alu_lanes": 0, "alu_mul_lanes": 0}


def _field_names() -> list[str]:
    return [f.name for f in dataclasses.fields(Config)]


_PRESETS: dict[str, dict] = {
    # VTA's default 1x16x16 int8/int32 configuration with its buffer sizes.
    "default": {},
    # Small block and buffers: fast RTL builds and tests.
    "tiny": dict(block_in=8, block_out=8, uop_depth=512, inp_depth=256, wgt_depth=64,
                 acc_depth=256, out_depth=256),
    # Block 8 with VTA-sized buffers: the second preset compilers are checked on.
    "block8": dict(block_in=8, block_out=8, uop_depth=8192, inp_depth=2048, wgt_depth=1024,
                   acc_depth=2048, out_depth=2048),
    # Default array with a 128-bit memory bus.
    "wide": dict(bus_bits=128),
    # Boards (vtalab.fpga.boards adds the part, flow and platform; the sizing reasons are
    # in docs/fpga.md). ECP5: the MULT18X18D count sets the DSP shapes; the ULX3S builds its
    # GEMM products from carry rows instead (its board's gemm_dsps=0).
    "ulx3s-85f": dict(block_in=16, block_out=8, uop_depth=2048, inp_depth=2048, wgt_depth=512,
                      acc_depth=1024, out_depth=1024, clock_mhz=100.0, alu_mul_bits=18,
                      alu_lanes=2),
    "orangecrab-25f": dict(block_in=16, block_out=4, uop_depth=1024, inp_depth=1024,
                           wgt_depth=256, acc_depth=512, out_depth=512, clock_mhz=120.0,
                           alu_mul_bits=18),
    "pynq-z1": dict(uop_depth=4096, acc_depth=1024, out_depth=1024),
    # VTA's DE10-Nano shape and buffers fit the 5CSEBA6 (111 of 112 DSP blocks, 491 of 553
    # M10K); the bus as wide as its FPGA-to-HPS bridge (128 bits).
    "de10-nano": dict(bus_bits=128, clock_mhz=100.0),
}


def preset_names() -> list[str]:
    return sorted(_PRESETS)


def preset(name: str) -> Config:
    try:
        values = _PRESETS[name]
    except KeyError:
        raise ConfigError(f"preset must be one of {preset_names()}, not {name!r}") from None
    return Config(**values, name=name)


def register_preset(name: str, **values) -> None:
    """Add a preset (board packages call this); the values are checked at once."""
    Config(**values, name=name)
    _PRESETS[name] = dict(values)


def load_config(source: "str | os.PathLike | Config | None") -> Config:
    """A Config from a preset name, a .json/.toml file, or a Config (returned as is)."""
    if source is None:
        return preset("default")
    if isinstance(source, Config):
        return source
    text = str(source)
    if text in _PRESETS:
        return preset(text)
    path = Path(text)
    if not path.is_file():
        raise ConfigError(f"config must be a preset name {preset_names()} or an existing "
                          f".json/.toml file, not {text!r}")
    raw = path.read_text()
    try:
        if path.suffix == ".toml":
            try:
                import tomllib
            except ModuleNotFoundError:  # Python 3.10
                import tomli as tomllib
            data = tomllib.loads(raw)
        else:
            data = json.loads(raw)
    except ValueError as exc:
        raise ConfigError(f"config file {text} must be valid {path.suffix[1:] or 'json'}, "
                          f"not: {exc}") from None
    return Config.from_dict(data, name=path.stem)
