"""Instruction streams of small compiled convs, for the stream-pass tests."""
from vtalab.compiler.exec.templates import Epilogue, fused_conv2d
from vtalab.compiler.vta.pipeline import lower
from vtalab.spec import preset


def conv_insns(shape, knobs, stop_after: str) -> list:
    """The instructions of a `default` conv (bias, shift 9, relu) after pass ``stop_after``."""
    cfg = preset("default")
    sch, args = fused_conv2d(cfg, shape, Epilogue(bias=True, shifts=(9,), lo=0, hi=127), knobs)
    return [r.insn for r in lower(sch, cfg, args, stop_after=stop_after).records]
