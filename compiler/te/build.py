"""Entry point for generic lowering: schedule -> PrimFunc (no accelerator passes)."""
from .lower import schedule_to_func

lower_schedule = schedule_to_func
