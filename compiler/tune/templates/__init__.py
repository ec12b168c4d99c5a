"""Every tunable template registers itself here (compiler/tune/task.py `register`)."""
from . import accel, alu, cpu  # noqa: F401
