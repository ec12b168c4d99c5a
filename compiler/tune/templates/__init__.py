"""Every tunable template registers itself here (compiler/tune/task.py `register`)."""
import importlib.util

from . import accel  # noqa: F401

if importlib.util.find_spec(__name__ + ".cpu") is not None:
    from . import cpu  # noqa: F401
