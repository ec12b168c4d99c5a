"""Autotuning: knob spaces, templates, measurers, executors, an XGBoost cost model,
search strategies and a JSON-lines tuning log (see README "Tune a model").

    from vtalab.compiler.tune import TuningLog, tune, tasks_of_model
    results = tune(tasks_of_model("model.onnx", "default"), trials=64,
                   log=TuningLog("tune.jsonl"), jobs=2)
"""
from .apply import ApplyBest, UntunedWarning, lookup  # noqa: F401
from .cost import EpilogueCost, conv2d_candidates, conv2d_cycles, conv2d_ranked  # noqa: F401
from .executor import LocalExecutor, SerialExecutor, get_executor  # noqa: F401
from .log import TuningLog, make_record  # noqa: F401
from .measure import MeasureResult, get_measurer  # noqa: F401
from .space import Bool, Choice, Space, Split  # noqa: F401
from .task import Task, Template, get_template, register  # noqa: F401
from .tuner import TaskResult, tune, tune_task  # noqa: F401
