"""The contract every layer of vtalab stands on: Config, ISA, register map, errors.

Pure Python with no heavy imports, so ``import vtalab.spec`` stays cheap.
"""
from .errors import VtaError, ConfigError, IsaError, SimError, DeadlockError, MemoryAccessError
from .config import Config, preset, preset_names, load_config
from .isa import Isa

__all__ = [
    "VtaError", "ConfigError", "IsaError", "SimError", "DeadlockError", "MemoryAccessError",
    "Config", "preset", "preset_names", "load_config", "Isa",
]
