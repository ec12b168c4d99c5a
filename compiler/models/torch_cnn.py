"""torchvision's CNN architectures written with torch.nn, layer for layer (random weights;
needs the [torch] extra). torchvision itself is not required (no wheel matching every torch
release exists), so vtalab's PyTorch import is tested on the same graphs.

    model = build("mobilenet_v3_small")           # eval mode, seeded random weights
"""
from __future__ import annotations

import torch
from torch import nn


def _div(v: float, divisor: int = 8) -> int:
    """torchvision's _make_divisible."""
    new = max(divisor, int(v + divisor / 2) // divisor * divisor)
    return new + divisor if new < 0.9 * v else new


def conv_bn(cin, cout, k=3, stride=1, groups=1, act=nn.ReLU, dilation=1):
    layers = [nn.Conv2d(cin, cout, k, stride, (k - 1) // 2 * dilation, dilation, groups,
                        bias=False), nn.BatchNorm2d(cout)]
    return nn.Sequential(*layers, act(inplace=True)) if act else nn.Sequential(*layers)


# ---- ResNet-50 -----------------------------------------------------------------------------
class Bottleneck(nn.Module):
    def __init__(self, cin, width, stride):
        super().__init__()
        self.body = nn.Sequential(conv_bn(cin, width, 1), conv_bn(width, width, 3, stride),
                                  conv_bn(width, width * 4, 1, act=None))
        self.down = conv_bn(cin, width * 4, 1, stride, act=None) \
            if stride != 1 or cin != width * 4 else nn.Identity()

    def forward(self, x):
        return torch.relu(self.body(x) + self.down(x))


def resnet50(num_classes=1000):
    layers, cin = [conv_bn(3, 64, 7, 2), nn.MaxPool2d(3, 2, 1)], 64
    for width, blocks, stride in ((64, 3, 1), (128, 4, 2), (256, 6, 2), (512, 3, 2)):
        for i in range(blocks):
            layers.append(Bottleneck(cin, width, stride if i == 0 else 1))
            cin = width * 4
    return nn.Sequential(*layers, nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                         nn.Linear(2048, num_classes))


# ---- VGG-11, SqueezeNet 1.1 ----------------------------------------------------------------
def vgg11(num_classes=1000):
    layers, cin = [], 3
    for v in (64, "M", 128, "M", 256, 256, "M", 512, 512, "M", 512, 512, "M"):
        if v == "M":
            layers.append(nn.MaxPool2d(2, 2))
        else:
            layers += [nn.Conv2d(cin, v, 3, padding=1), nn.ReLU(inplace=True)]
            cin = v
    return nn.Sequential(*layers, nn.AdaptiveAvgPool2d(7), nn.Flatten(),
                         nn.Linear(512 * 49, 4096), nn.ReLU(True), nn.Dropout(),
                         nn.Linear(4096, 4096), nn.ReLU(True), nn.Dropout(),
                         nn.Linear(4096, num_classes))


class Fire(nn.Module):
    def __init__(self, cin, squeeze, e1, e3):
        super().__init__()
        self.squeeze = nn.Sequential(nn.Conv2d(cin, squeeze, 1), nn.ReLU(inplace=True))
        self.e1 = nn.Sequential(nn.Conv2d(squeeze, e1, 1), nn.ReLU(inplace=True))
        self.e3 = nn.Sequential(nn.Conv2d(squeeze, e3, 3, padding=1), nn.ReLU(inplace=True))

    def forward(self, x):
        s = self.squeeze(x)
        return torch.cat([self.e1(s), self.e3(s)], 1)


def squeezenet1_1(num_classes=1000):
    pool = lambda: nn.MaxPool2d(3, 2, ceil_mode=True)  # noqa: E731
    return nn.Sequential(
        nn.Conv2d(3, 64, 3, 2), nn.ReLU(inplace=True), pool(), Fire(64, 16, 64, 64),
        Fire(128, 16, 64, 64), pool(), Fire(128, 32, 128, 128), Fire(256, 32, 128, 128), pool(),
        Fire(256, 48, 192, 192), Fire(384, 48, 192, 192), Fire(384, 64, 256, 256),
        Fire(512, 64, 256, 256), nn.Dropout(0.5), nn.Conv2d(512, num_classes, 1),
        nn.ReLU(inplace=True), nn.AdaptiveAvgPool2d(1), nn.Flatten())


# ---- MobileNet V2 / V3, EfficientNet-B0 ----------------------------------------------------
class SqueezeExcite(nn.Module):
    def __init__(self, channels, squeeze, act=nn.ReLU, gate=nn.Hardsigmoid):
        super().__init__()
        self.fc1, self.fc2 = nn.Conv2d(channels, squeeze, 1), nn.Conv2d(squeeze, channels, 1)
        self.act, self.gate = act(), gate()

    def forward(self, x):
        s = nn.functional.adaptive_avg_pool2d(x, 1)
        return x * self.gate(self.fc2(self.act(self.fc1(s))))


class InvertedResidual(nn.Module):
    def __init__(self, cin, k, expanded, cout, se, act, stride, se_args=None):
        super().__init__()
        layers = [] if expanded == cin else [conv_bn(cin, expanded, 1, act=act)]
        layers.append(conv_bn(expanded, expanded, k, stride, groups=expanded, act=act))
        if se:
            layers.append(SqueezeExcite(expanded, *(se_args or (_div(expanded // 4),))))
        layers.append(conv_bn(expanded, cout, 1, act=None))
        self.body = nn.Sequential(*layers)
        self.residual = stride == 1 and cin == cout

    def forward(self, x):
        y = self.body(x)
        return x + y if self.residual else y


def mobilenet_v2(num_classes=1000):
    layers, cin = [conv_bn(3, 32, 3, 2, act=nn.ReLU6)], 32
    for t, c, n, s in ((1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2),
                       (6, 96, 3, 1), (6, 160, 3, 2), (6, 320, 1, 1)):
        for i in range(n):
            layers.append(InvertedResidual(cin, 3, cin * t, c, False, nn.ReLU6,
                                           s if i == 0 else 1))
            cin = c
    return nn.Sequential(*layers, conv_bn(320, 1280, 1, act=nn.ReLU6), nn.AdaptiveAvgPool2d(1),
                         nn.Flatten(), nn.Dropout(0.2), nn.Linear(1280, num_classes))


def mobilenet_v3_small(num_classes=1000):
    re, hs = nn.ReLU, nn.Hardswish
    config = ((16, 3, 16, 16, True, re, 2), (16, 3, 72, 24, False, re, 2),
              (24, 3, 88, 24, False, re, 1), (24, 5, 96, 40, True, hs, 2),
              (40, 5, 240, 40, True, hs, 1), (40, 5, 240, 40, True, hs, 1),
              (40, 5, 120, 48, True, hs, 1), (48, 5, 144, 48, True, hs, 1),
              (48, 5, 288, 96, True, hs, 2), (96, 5, 576, 96, True, hs, 1),
              (96, 5, 576, 96, True, hs, 1))
    layers = [conv_bn(3, 16, 3, 2, act=hs)]
    layers += [InvertedResidual(*row) for row in config]
    return nn.Sequential(*layers, conv_bn(96, 576, 1, act=hs), nn.AdaptiveAvgPool2d(1),
                         nn.Flatten(), nn.Linear(576, 1024), nn.Hardswish(), nn.Dropout(0.2),
                         nn.Linear(1024, num_classes))


def efficientnet_b0(num_classes=1000):
    layers, cin = [conv_bn(3, 32, 3, 2, act=nn.SiLU)], 32
    for t, k, s, c, n in ((1, 3, 1, 16, 1), (6, 3, 2, 24, 2), (6, 5, 2, 40, 2),
                          (6, 3, 2, 80, 3), (6, 5, 1, 112, 3), (6, 5, 2, 192, 4),
                          (6, 3, 1, 320, 1)):
        for i in range(n):
            layers.append(InvertedResidual(cin, k, cin * t, c, True, nn.SiLU,
                                           s if i == 0 else 1,
                                           (max(1, cin // 4), nn.SiLU, nn.Sigmoid)))
            cin = c
    return nn.Sequential(*layers, conv_bn(320, 1280, 1, act=nn.SiLU), nn.AdaptiveAvgPool2d(1),
                         nn.Flatten(), nn.Dropout(0.2), nn.Linear(1280, num_classes))


# ---- ShuffleNet V2 x1.0, DenseNet-121 ------------------------------------------------------
def channel_shuffle(x, groups=2):
    n, c, h, w = x.shape
    return x.view(n, groups, c // groups, h, w).transpose(1, 2).reshape(n, c, h, w)


class ShuffleBlock(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        half = cout // 2
        self.stride = stride
        self.branch1 = nn.Sequential(conv_bn(cin, cin, 3, stride, groups=cin, act=None),
                                     conv_bn(cin, half, 1)) if stride > 1 else nn.Identity()
        self.branch2 = nn.Sequential(conv_bn(cin if stride > 1 else half, half, 1),
                                     conv_bn(half, half, 3, stride, groups=half, act=None),
                                     conv_bn(half, half, 1))

    def forward(self, x):
        if self.stride == 1:
            a, b = x.chunk(2, dim=1)
            out = torch.cat((a, self.branch2(b)), 1)
        else:
            out = torch.cat((self.branch1(x), self.branch2(x)), 1)
        return channel_shuffle(out)


def shufflenet_v2_x1_0(num_classes=1000):
    layers, cin = [conv_bn(3, 24, 3, 2), nn.MaxPool2d(3, 2, 1)], 24
    for repeats, cout in ((4, 116), (8, 232), (4, 464)):
        layers += [ShuffleBlock(cin, cout, 2)] + [ShuffleBlock(cout, cout, 1)
                                                  for _ in range(repeats - 1)]
        cin = cout
    return nn.Sequential(*layers, conv_bn(464, 1024, 1), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                         nn.Linear(1024, num_classes))


class DenseLayer(nn.Module):
    def __init__(self, cin, growth=32, bn_size=4):
        super().__init__()
        self.body = nn.Sequential(nn.BatchNorm2d(cin), nn.ReLU(inplace=True),
                                  nn.Conv2d(cin, bn_size * growth, 1, bias=False),
                                  nn.BatchNorm2d(bn_size * growth), nn.ReLU(inplace=True),
                                  nn.Conv2d(bn_size * growth, growth, 3, padding=1, bias=False))

    def forward(self, x):
        return torch.cat([x, self.body(x)], 1)


def densenet121(num_classes=1000):
    layers, c = [nn.Conv2d(3, 64, 7, 2, 3, bias=False), nn.BatchNorm2d(64),
                 nn.ReLU(inplace=True), nn.MaxPool2d(3, 2, 1)], 64
    for i, blocks in enumerate((6, 12, 24, 16)):
        for _ in range(blocks):
            layers.append(DenseLayer(c))
            c += 32
        if i < 3:
            layers += [nn.BatchNorm2d(c), nn.ReLU(inplace=True),
                       nn.Conv2d(c, c // 2, 1, bias=False), nn.AvgPool2d(2, 2)]
            c //= 2
    return nn.Sequential(*layers, nn.BatchNorm2d(c), nn.ReLU(inplace=True),
                         nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(c, num_classes))


BUILDERS = {f.__name__: f for f in (resnet50, mobilenet_v2, mobilenet_v3_small,
                                    efficientnet_b0, squeezenet1_1, shufflenet_v2_x1_0,
                                    densenet121, vgg11)}


def randomize_norms(model: nn.Module, seed: int = 0) -> nn.Module:
    """Batch-norm statistics and affine parameters drawn at random (a freshly built model's
    are the identity), so folding them is exercised."""
    gen = torch.Generator().manual_seed(seed)
    for m in model.modules():
        if isinstance(m, nn.BatchNorm2d):
            c = m.num_features
            m.running_mean.copy_(torch.randn(c, generator=gen) * 0.1)
            m.running_var.copy_(torch.rand(c, generator=gen) * 0.5 + 0.75)
            m.weight.data.copy_(torch.rand(c, generator=gen) * 0.5 + 0.75)
            m.bias.data.copy_(torch.randn(c, generator=gen) * 0.1)
    return model


def build(name: str, seed: int = 0, num_classes: int = 1000) -> nn.Module:
    if name not in BUILDERS:
        from ..graph.errors import ModelError
        raise ModelError(f"model name must be one of {sorted(BUILDERS)}, not {name!r}")
    torch.manual_seed(seed)
    with torch.no_grad():
        return randomize_norms(BUILDERS[name](num_classes), seed).eval()
