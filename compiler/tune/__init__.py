"""Autotuning: an analytic cost model, a measured knob search and a JSON tuning log."""
from .conv import best_conv2d_knobs, conv2d_tune, rtl_measure, workload_key
from .cost import EpilogueCost, conv2d_candidates, conv2d_cycles, conv2d_ranked
from .log import TuningLog
