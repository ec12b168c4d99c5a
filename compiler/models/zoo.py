"""Models built in code with seeded random weights: ResNet-18, a MobileNet-style network
(depthwise convolutions, ReLU6) and an MLP with softmax. Each returns an onnx.ModelProto."""
from __future__ import annotations

from .builder import OnnxNet


def resnet18(input_size: int = 224, num_classes: int = 1000, batch: int = 1, seed: int = 0):
    """ResNet-18 (He et al. 2015), NCHW input [batch, 3, input_size, input_size]."""
    net = OnnxNet("resnet18", seed)
    x = net.input("input", (batch, 3, input_size, input_size))
    x = net.relu(net.batch_norm(net.conv(x, 3, 64, 7, stride=2, pad=3), 64))
    x = net.max_pool(x, 3, 2, 1)
    cin = 64
    for stage, cout in enumerate((64, 128, 256, 512)):
        for block in range(2):
            stride = 2 if stage > 0 and block == 0 else 1
            x = _basic_block(net, x, cin, cout, stride)
            cin = cout
    x = net.flatten(net.global_avg_pool(x))
    logits = net.gemm(x, 512, num_classes)
    net.output(logits, (batch, num_classes))
    return net.model()


def _basic_block(net: OnnxNet, x: str, cin: int, cout: int, stride: int) -> str:
    y = net.relu(net.batch_norm(net.conv(x, cin, cout, 3, stride), cout))
    y = net.batch_norm(net.conv(y, cout, cout, 3), cout, gamma=0.5)
    shortcut = x
    if stride != 1 or cin != cout:
        shortcut = net.batch_norm(net.conv(x, cin, cout, 1, stride, pad=0), cout, gamma=0.5)
    return net.relu(net.add(y, shortcut))


MOBILENET_STAGES = ((64, 1), (128, 2), (128, 1), (256, 2), (256, 1), (512, 2))


def mobilenet(input_size: int = 224, num_classes: int = 1000, width: float = 1.0,
              batch: int = 1, seed: int = 0):
    """MobileNet-v1-style: 3x3 stem, depthwise-separable blocks with BN + ReLU6."""
    net = OnnxNet("mobilenet", seed)
    x = net.input("input", (batch, 3, input_size, input_size))
    cin = max(8, int(32 * width))
    x = net.relu6(net.batch_norm(net.conv(x, 3, cin, 3, stride=2), cin))
    for channels, stride in MOBILENET_STAGES:
        cout = max(8, int(channels * width))
        x = net.relu6(net.batch_norm(net.conv(x, cin, cin, 3, stride, groups=cin), cin))
        x = net.relu6(net.batch_norm(net.conv(x, cin, cout, 1, pad=0), cout))
        cin = cout
    x = net.flatten(net.global_avg_pool(x))
    logits = net.gemm(x, cin, num_classes)
    net.output(logits, (batch, num_classes))
    return net.model()


def mlp(features: int = 64, hidden: tuple[int, ...] = (128, 64), num_classes: int = 10,
        batch: int = 1, seed: int = 0):
    """Fully connected layers with ReLU (the first as MatMul + Add), then softmax."""
    net = OnnxNet("mlp", seed)
    x = net.input("input", (batch, features))
    fin = features
    for i, width in enumerate(hidden):
        x = net.matmul_add(x, fin, width) if i == 0 else net.gemm(x, fin, width)
        x = net.relu(x)
        fin = width
    probs = net.softmax(net.gemm(x, fin, num_classes))
    net.output(probs, (batch, num_classes))
    return net.model()
