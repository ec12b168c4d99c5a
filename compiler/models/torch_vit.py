"""torchvision's vision transformer (vit_b_16) written with torch.nn, layer for layer, with
the depth and width as parameters (random weights; needs the [torch] extra).

    model = vit(layers=4)          # a 4-layer encoder at 224/16 (the bench's default)
    model = vit_b_16()             # 12 layers, 768 wide, 12 heads
"""
from __future__ import annotations

import torch
from torch import nn


class EncoderBlock(nn.Module):
    def __init__(self, heads: int, dim: int, mlp: int):
        super().__init__()
        self.ln_1 = nn.LayerNorm(dim, eps=1e-6)
        self.self_attention = nn.MultiheadAttention(dim, heads, batch_first=True)
        self.ln_2 = nn.LayerNorm(dim, eps=1e-6)
        self.mlp = nn.Sequential(nn.Linear(dim, mlp), nn.GELU(), nn.Dropout(0.0),
                                 nn.Linear(mlp, dim), nn.Dropout(0.0))

    def forward(self, x):
        y = self.ln_1(x)
        y, _ = self.self_attention(y, y, y, need_weights=False)
        x = x + y
        return x + self.mlp(self.ln_2(x))


class VisionTransformer(nn.Module):
    def __init__(self, image=224, patch=16, layers=12, heads=12, dim=768, mlp=3072,
                 num_classes=1000):
        super().__init__()
        self.patch, self.dim = patch, dim
        self.conv_proj = nn.Conv2d(3, dim, patch, patch)
        tokens = (image // patch) ** 2 + 1
        self.class_token = nn.Parameter(torch.randn(1, 1, dim) * 0.02)
        self.pos_embedding = nn.Parameter(torch.randn(1, tokens, dim) * 0.02)
        self.layers = nn.Sequential(*[EncoderBlock(heads, dim, mlp) for _ in range(layers)])
        self.ln = nn.LayerNorm(dim, eps=1e-6)
        self.head = nn.Linear(dim, num_classes)

    def forward(self, x):
        n = x.shape[0]
        x = self.conv_proj(x).reshape(n, self.dim, -1).permute(0, 2, 1)
        x = torch.cat([self.class_token.expand(n, -1, -1), x], dim=1) + self.pos_embedding
        x = self.ln(self.layers(x))
        return self.head(x[:, 0])


def vit(layers: int = 4, image: int = 224, seed: int = 0, **kw) -> VisionTransformer:
    torch.manual_seed(seed)
    return VisionTransformer(image=image, layers=layers, **kw).eval()


def vit_b_16(seed: int = 0) -> VisionTransformer:
    return vit(12, 224, seed)
