"""Every tunable template registers itself here (compiler/tune/task.py `register`)."""
from . import accel  # noqa: F401

try:  # TEMPORARY while cpu.py is written
    from . import cpu  # noqa: F401
except ImportError:
    pass
