# SPDX-License-Identifier: MIT
"""Models written out for the tests and the benchmark (random weights, no
torchvision): a ResNet-18 in torchvision's layout, a small ViT and a
pre-norm transformer block."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class BasicBlock(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.down = None
        if stride != 1 or cin != cout:
            self.down = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False),
                                      nn.BatchNorm2d(cout))

    def forward(self, x):
        y = F.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        return F.relu(y + (x if self.down is None else self.down(x)))


class ResNet18(nn.Module):
    """torchvision's resnet18 layout (7x7/2 stem, max pool, 4 stages of 2
    basic blocks, global average pool, linear) with widths w, 2w, 4w, 8w."""

    def __init__(self, width=64, classes=1000):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, width, 7, 2, 3, bias=False), nn.BatchNorm2d(width),
                                  nn.ReLU(), nn.MaxPool2d(3, 2, 1))
        blocks, cin = [], width
        for i, cout in enumerate((width, 2 * width, 4 * width, 8 * width)):
            blocks += [BasicBlock(cin, cout, 1 if i == 0 else 2), BasicBlock(cout, cout, 1)]
            cin = cout
        self.blocks = nn.Sequential(*blocks)
        self.fc = nn.Linear(cin, classes)

    def forward(self, x):
        x = self.blocks(self.stem(x))
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


class ViT(nn.Module):
    """A small vision transformer: 4x4 patches by a strided convolution, a
    class token, learned positions, pre-norm encoder layers, linear head."""

    def __init__(self, image=32, patch=4, dim=64, depth=2, heads=4, classes=10):
        super().__init__()
        self.patch = nn.Conv2d(3, dim, patch, patch)
        self.cls = nn.Parameter(torch.randn(1, 1, dim) * 0.02)
        self.pos = nn.Parameter(torch.randn(1, (image // patch) ** 2 + 1, dim) * 0.02)
        layer = nn.TransformerEncoderLayer(dim, heads, 4 * dim, dropout=0.0, activation="gelu",
                                           batch_first=True, norm_first=True)
        self.encoder = nn.TransformerEncoder(layer, depth, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, classes)

    def forward(self, x):
        x = self.patch(x).flatten(2).transpose(1, 2)
        x = torch.cat([self.cls.expand(x.shape[0], -1, -1), x], 1) + self.pos
        x = self.norm(self.encoder(x))
        return self.head(x[:, 0])


class Block(nn.Module):
    """A pre-norm transformer block: attention written out (bmm, softmax) and
    a GELU MLP, residuals."""

    def __init__(self, dim=64, heads=4):
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.qkv, self.proj = nn.Linear(dim, 3 * dim), nn.Linear(dim, dim)
        self.fc1, self.fc2 = nn.Linear(dim, 4 * dim), nn.Linear(4 * dim, dim)

    def forward(self, x):
        b, n, d = x.shape
        h = self.heads
        q, k, v = self.qkv(self.ln1(x)).reshape(b, n, 3, h, d // h).permute(2, 0, 3, 1, 4)
        att = torch.softmax((q @ k.transpose(-1, -2)) * (d // h) ** -0.5, -1)
        x = x + self.proj((att @ v).transpose(1, 2).reshape(b, n, d))
        return x + self.fc2(F.gelu(self.fc1(self.ln2(x))))
