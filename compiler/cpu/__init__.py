"""CPU operator library: compute declaration + schedule (compiler/te) -> loop IR -> LLVM.

Every operator compiles once per (shape, dtype, options, target) and then runs natively
(JIT, cached on disk); none falls back to a Python loop. The schedules of conv2d (NCHW),
dense, pooling and softmax take ``knobs`` (``knobs.py``; None: the hand heuristic), which
the autotuner searches (``compiler/tune/templates/cpu.py``).

    from vtalab.compiler import cpu
    y = cpu.conv2d(x, w, bias, stride=2, padding=3)
    y = cpu.softmax(logits)
"""
from .conv import (conv2d, conv2d_nchwc, conv2d_nchw_kernel, conv2d_nchwc_kernel,
                   conv2d_nchw_compute, conv2d_nchwc_compute, schedule_conv_nchw,
                   schedule_conv_nchwc, conv2d_nchw_func, conv2d_nchw_knobs)
from .dense import (dense, matmul, pack_dense_weight, dense_kernel, matmul_kernel,
                    dense_block, dense_func)
from .pool import (max_pool2d, avg_pool2d, global_avg_pool, global_max_pool, pool2d_kernel,
                   global_pool_kernel, pool2d_func, pool2d_knobs, global_pool_func)
from .elementwise import (binary, unary, add, sub, mul, div, maximum, minimum, relu,
                          sigmoid, exp, clip, batch_norm)
from .softmax import softmax, softmax_kernel, softmax_knob_func
from .transform import (transpose, reshape, pad, concat, pack_nchwc, unpack_nchwc,
                        pack_conv_weight)
from .quant import quantize, dequantize, requantize, requantize_shift
from .common import compiled, schedule_elementwise, pick_lanes
