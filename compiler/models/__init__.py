"""Models built in code (seeded random weights, nothing downloaded).

    from vtalab.compiler.models import resnet18, mobilenet, mlp, quantize_with_onnxruntime
"""
from .qdq import quantize_with_onnxruntime, random_samples
from .zoo import mlp, mobilenet, resnet18

__all__ = ["resnet18", "mobilenet", "mlp", "quantize_with_onnxruntime", "random_samples"]
