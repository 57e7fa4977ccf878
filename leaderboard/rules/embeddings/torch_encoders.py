"""Encoders backed by torch modules: ImageNet CNNs and user-supplied weights.

Every image is resized with Pillow (bilinear) to the model's input size,
scaled to [0, 1], normalised with the model's mean and std, and embedded in
inference mode on the CPU; the vector is the model's global-average-pooled
feature (or the TorchScript module's output). torch is imported here, so
this module is imported only when a torch encoder is requested.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

import numpy as np
import torch
from PIL import Image

from leaderboard.rules.embeddings.architectures import MobileNetV2, ResNet18
from leaderboard.rules.embeddings.base import check_images, file_sha256

IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)
CLIP_MEAN = (0.48145466, 0.4578275, 0.40821073)
CLIP_STD = (0.26862954, 0.26130258, 0.27577711)
INPUT_SIZE = 224
BATCH = 32
"""Images per forward pass (bounds memory on small machines)."""


@dataclass(frozen=True)
class Preprocessing:
    """Input size and per-channel normalisation of one model."""

    size: int
    mean: tuple[float, float, float]
    std: tuple[float, float, float]

    def batch(self, images: Sequence[np.ndarray]) -> torch.Tensor:
        """(N, 3, size, size) float32 tensor of normalised images."""
        resized = [np.asarray(Image.fromarray(image).convert("RGB").resize(
            (self.size, self.size), Image.BILINEAR), dtype=np.float32) / 255.0 for image in images]
        array = (np.stack(resized) - np.asarray(self.mean, dtype=np.float32)) / \
            np.asarray(self.std, dtype=np.float32)
        return torch.from_numpy(np.ascontiguousarray(array.transpose(0, 3, 1, 2), dtype=np.float32))


IMAGENET = Preprocessing(INPUT_SIZE, IMAGENET_MEAN, IMAGENET_STD)
CLIP = Preprocessing(INPUT_SIZE, CLIP_MEAN, CLIP_STD)


class TorchEncoder:
    """A torch feature extractor as an `Encoder` (cosine nearest neighbour)."""

    metric = "cosine"

    def __init__(self, name: str, content_hash: str, forward: Callable[[torch.Tensor], torch.Tensor],
                 preprocessing: Preprocessing) -> None:
        self.name = name
        self.content_hash = content_hash
        self._forward = forward
        self._preprocessing = preprocessing

    def embed(self, images: Sequence[np.ndarray]) -> np.ndarray:
        """(N, D) float32 features, computed in batches of `BATCH`."""
        images = check_images(images)
        chunks = []
        # One intra-op thread: the float sums of a convolution depend on how many
        # threads split it, and a rule's scores must not depend on the machine's
        # core count or OMP_NUM_THREADS (the sandboxed container form included).
        threads = torch.get_num_threads()
        torch.set_num_threads(1)
        try:
            with torch.inference_mode():
                for start in range(0, len(images), BATCH):
                    batch = self._preprocessing.batch(images[start:start + BATCH])
                    out = self._forward(batch)
                    if out.ndim != 2 or out.shape[0] != batch.shape[0]:
                        raise ValueError(f"{self.name}: the model returned shape {tuple(out.shape)}, "
                                         f"expected ({batch.shape[0]}, D)")
                    chunks.append(out.to(torch.float32).numpy())
        finally:
            torch.set_num_threads(threads)
        if not chunks:
            return np.zeros((0, 0), dtype=np.float32)
        return np.ascontiguousarray(np.concatenate(chunks), dtype=np.float32)


def load_state_dict_into(module: torch.nn.Module, path: Path, name: str) -> torch.nn.Module:
    """Load a weights-only state dict (strict); a mismatch raises ValueError naming the file."""
    state = torch.load(path, map_location="cpu", weights_only=True)
    if not isinstance(state, dict):
        raise ValueError(f"{name} weights {path}: expected a state dict, got {type(state).__name__}")
    try:
        module.load_state_dict(state, strict=True)
    except RuntimeError as exc:
        detail = " ".join(part.strip() for part in str(exc).splitlines()[:2])
        raise ValueError(f"{name} weights {path}: not a torchvision-layout {name} state dict: "
                         f"{detail}") from exc
    return module.eval()


def mobilenet_v2(path: Path) -> TorchEncoder:
    """ImageNet MobileNetV2 from a torchvision-layout state dict (1280-d features)."""
    model = load_state_dict_into(MobileNetV2(), path, "mobilenet_v2")
    return TorchEncoder("mobilenet_v2", file_sha256(path), model.embed, IMAGENET)


def efficientnet_lite0(path: Path) -> TorchEncoder:
    """ImageNet EfficientNet-Lite0 (the `efficientnet_lite_pytorch` architecture), 1280-d."""
    from efficientnet_lite_pytorch import EfficientNet

    model = load_state_dict_into(EfficientNet.from_name("efficientnet-lite0"), path,
                                 "efficientnet_lite0")

    def forward(batch: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.adaptive_avg_pool2d(model.extract_features(batch), 1).flatten(1)

    return TorchEncoder("efficientnet_lite0", file_sha256(path), forward, IMAGENET)


def resnet18(path: Path) -> TorchEncoder:
    """ImageNet ResNet-18 from a user-supplied torchvision-layout state dict (512-d)."""
    model = load_state_dict_into(ResNet18(), path, "resnet18")
    return TorchEncoder("resnet18", file_sha256(path), model.embed, IMAGENET)


def torchscript(name: str, path: Path, preprocessing: Preprocessing) -> TorchEncoder:
    """A user-exported TorchScript image encoder: (N, 3, 224, 224) normalised -> (N, D)."""
    module = torch.jit.load(str(path), map_location="cpu").eval()
    return TorchEncoder(name, file_sha256(path), module, preprocessing)
