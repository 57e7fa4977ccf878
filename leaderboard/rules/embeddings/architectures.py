"""MobileNetV2 and ResNet-18 in torchvision's state-dict layout, without torchvision.

PyPI's torchvision does not import beside the CPU torch this project pins, so
the two architectures are written out here with torchvision's module names
(`features.N.conv.M...`, `layerN.M.conv1...`), which lets the published
ImageNet state dicts load with `strict=True`. Only the parts up to the
global-average-pooled feature vector are used; the classifier is built so
that the state dict matches, and never called. Importing this module imports
torch: import it lazily.
"""

from __future__ import annotations

import torch
from torch import nn

MOBILENET_V2_SETTING = ((1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2),
                        (6, 96, 3, 1), (6, 160, 3, 2), (6, 320, 1, 1))
"""(expand ratio t, channels c, repeats n, first stride s) of torchvision's MobileNetV2."""


def _conv_bn_relu6(inp: int, out: int, kernel: int = 3, stride: int = 1, groups: int = 1) -> nn.Sequential:
    return nn.Sequential(
        nn.Conv2d(inp, out, kernel, stride, (kernel - 1) // 2, groups=groups, bias=False),
        nn.BatchNorm2d(out),
        nn.ReLU6(inplace=True),
    )


class InvertedResidual(nn.Module):
    """torchvision's MobileNetV2 block; `conv` holds the layers under the same indices."""

    def __init__(self, inp: int, out: int, stride: int, expand_ratio: int) -> None:
        super().__init__()
        hidden = inp * expand_ratio
        self.use_res_connect = stride == 1 and inp == out
        layers: list[nn.Module] = []
        if expand_ratio != 1:
            layers.append(_conv_bn_relu6(inp, hidden, kernel=1))
        layers += [
            _conv_bn_relu6(hidden, hidden, stride=stride, groups=hidden),
            nn.Conv2d(hidden, out, 1, 1, 0, bias=False),
            nn.BatchNorm2d(out),
        ]
        self.conv = nn.Sequential(*layers)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.conv(x) if self.use_res_connect else self.conv(x)


class MobileNetV2(nn.Module):
    """MobileNetV2 (width 1.0); `features(x)` pooled to a 1280-d vector by `embed`."""

    def __init__(self, num_classes: int = 1000) -> None:
        super().__init__()
        channels = 32
        layers: list[nn.Module] = [_conv_bn_relu6(3, channels, stride=2)]
        for t, c, n, s in MOBILENET_V2_SETTING:
            for i in range(n):
                layers.append(InvertedResidual(channels, c, s if i == 0 else 1, t))
                channels = c
        layers.append(_conv_bn_relu6(channels, 1280, kernel=1))
        self.features = nn.Sequential(*layers)
        self.classifier = nn.Sequential(nn.Dropout(0.2), nn.Linear(1280, num_classes))

    def embed(self, x: torch.Tensor) -> torch.Tensor:
        return nn.functional.adaptive_avg_pool2d(self.features(x), 1).flatten(1)


class BasicBlock(nn.Module):
    """torchvision's ResNet basic block (conv1/bn1/conv2/bn2, optional downsample.0/.1)."""

    def __init__(self, inp: int, out: int, stride: int) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(inp, out, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(out)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(out, out, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(out)
        self.downsample = None
        if stride != 1 or inp != out:
            self.downsample = nn.Sequential(nn.Conv2d(inp, out, 1, stride, bias=False), nn.BatchNorm2d(out))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        identity = x if self.downsample is None else self.downsample(x)
        out = self.relu(self.bn1(self.conv1(x)))
        return self.relu(self.bn2(self.conv2(out)) + identity)


class ResNet18(nn.Module):
    """ResNet-18; `embed` returns the 512-d global-average-pooled features."""

    def __init__(self, num_classes: int = 1000) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(3, 64, 7, 2, 3, bias=False)
        self.bn1 = nn.BatchNorm2d(64)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(3, 2, 1)
        widths = (64, 128, 256, 512)
        inp = 64
        for index, width in enumerate(widths, start=1):
            stride = 1 if index == 1 else 2
            setattr(self, f"layer{index}", nn.Sequential(BasicBlock(inp, width, stride),
                                                         BasicBlock(width, width, 1)))
            inp = width
        self.fc = nn.Linear(512, num_classes)

    def embed(self, x: torch.Tensor) -> torch.Tensor:
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        for index in range(1, 5):
            x = getattr(self, f"layer{index}")(x)
        return nn.functional.adaptive_avg_pool2d(x, 1).flatten(1)
