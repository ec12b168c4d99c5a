"""The accel_alu template on the functional simulator equals the alu node's int8 kernel for
every int8 input, over specs that align, round half to even (ties included), shift left and
clip, at the default config, tiny, and tiny with a 12-bit ALU multiplier (the rounding uses
no MUL); specs the ALU cannot run are refused with the reason."""
import numpy as np
import pytest

from vtalab.compiler.errors import CompileError
from vtalab.compiler.exec.alu_template import (AluSpec, check_spec, eye_weights,
                                               schedule_alu, tilings)
from vtalab.compiler.graph.ir import Node
from vtalab.compiler.graph.opdefs.alu import alu_value
from vtalab.compiler.vta import build
from vtalab.spec import preset

from ..fsim import run_fsim

SPECS = {
    "add aligned, rounded": AluSpec(2, ((0, 64), (1, 1)), "add", 7, -128, 127),
    "sub, one rounding bit": AluSpec(2, ((0, 1), (1, -2)), "add", 1, -128, 127),
    "max, clipped": AluSpec(2, ((0, 2), (1, 1)), "max", 2, -20, 90),
    "min of a source with itself": AluSpec(1, ((0, 1), (0, 4)), "min", 3, -128, 127),
    "mul, rounded": AluSpec(2, ((0, 1), (1, 1)), "mul", 6, -128, 127),
    "abs, left shift": AluSpec(1, ((0, 1), (0, -1)), "max", -2, -128, 127),
    "neg": AluSpec(1, ((0, -1),), "", 0, -128, 127),
    "leaky 2**-3": AluSpec(1, ((0, 8), (0, 1)), "max", 4, -128, 127),
    "relu": AluSpec(1, ((0, 1),), "", 0, 0, 127),
}
CONFIGS = {"default": preset("default"), "tiny": preset("tiny"),
           "tiny-mul12": preset("tiny").replace(alu_mul_bits=12)}
ENTRIES = 128


def _sources(cfg, count, seed):
    """Every int8 value in each source (and random pairings between them)."""
    rng = np.random.default_rng(seed)
    size = ENTRIES * cfg.batch * cfg.block_in
    return [rng.permutation(np.resize(np.arange(-128, 128), size)).astype(np.int8)
            .reshape(ENTRIES, cfg.batch, cfg.block_in) for _ in range(count)]


@pytest.mark.parametrize("config", sorted(CONFIGS))
@pytest.mark.parametrize("name", sorted(SPECS))
def test_template_equals_the_int8_kernel(config, name):
    cfg, spec = CONFIGS[config], SPECS[name]
    check_spec(cfg, spec)
    tile, vthreads = tilings(cfg, ENTRIES, spec)[-1]          # the smallest: several tiles
    sch, args = schedule_alu(cfg, ENTRIES, spec, tile, vthreads)
    program = build(sch, cfg, args)
    xs = _sources(cfg, spec.sources, 7)
    feeds = {f"x{i}": x for i, x in enumerate(xs)}
    feeds.update({f"eye{j}": w for j, w in enumerate(eye_weights(cfg, spec))})
    node = Node("n", "alu", tuple(feeds)[:spec.sources], ("y",),
                dict(loads=spec.loads, combine=spec.combine, shift=spec.shift, lo=spec.lo,
                     hi=spec.hi))
    assert np.array_equal(run_fsim(program, feeds)["out"], alu_value(node, *xs))


@pytest.mark.parametrize("config, spec, match", [
    (preset("default"), AluSpec(2, ((0, 128), (1, 1)), "add", 0, -128, 127), "load scale"),
    (preset("default"), AluSpec(2, ((0, 1), (1, 1)), "add", 15, -128, 127), "shift"),
    (preset("default"), AluSpec(1, ((0, 1),), "", -17, -128, 127), "shift"),
    (preset("tiny").replace(alu_mul_bits=6), AluSpec(2, ((0, 1), (1, 1)), "mul", 2, -128, 127),
     "MUL operands"),
    (preset("default").replace(block_out=8), AluSpec(1, ((0, 1),), "", 0, 0, 127),
     "block_in must equal block_out"),
])
def test_specs_the_alu_cannot_run_are_refused(config, spec, match):
    with pytest.raises(CompileError, match=match):
        check_spec(config, spec)
