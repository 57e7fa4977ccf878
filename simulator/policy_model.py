"""What the image policies share: the action layout, the RNN horizon, the `LeanConv` backbone and
the demonstration record.

The policies themselves are `simulator.policy_recipe`'s (policy mechanism 2). `LeanConv`
is three small strided convolutions, about 5 M multiply-adds per image, a sixth of
robomimic's `ShallowConv`, so a policy trains on one CPU core; robomimic's `VisualCore`
resolves it by class name. The actions are robosuite's OSC_POSE deltas (position / 5 cm,
rotation vector / 0.5 rad, gripper). Mechanism 1 (one agent-view camera, trained end to
end with its own spec) was retired once every published policy was of mechanism 2.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from simulator.errors import BadLevel

ACTION_DIM = 7
SEQUENCE_LENGTH = 10
"""Training sequence length and the RNN horizon (robomimic resets the state every horizon steps)."""
BACKBONE = "LeanConv"


def _register_backbone(rm) -> None:
    """Make `LeanConv` known to robomimic's VisualCore, which resolves backbones by class name."""
    import robomimic.models.obs_core as obs_core
    import torch
    from robomimic.models.base_nets import ConvBase

    if hasattr(obs_core, BACKBONE):
        return

    class LeanConv(ConvBase):
        """Three strided convolutions: 3 -> 16 (5x5, /2) -> 32 (3x3, /2) -> 32 (3x3)."""

        def __init__(self, input_channel: int = 3, output_channel: int = 32, feature_stride: int = 4) -> None:
            super().__init__()
            if feature_stride not in (2, 4):
                raise BadLevel(f"feature_stride must be 2 or 4, got {feature_stride}")
            self._output_channel = output_channel
            self._stride = feature_stride
            self.nets = torch.nn.Sequential(
                torch.nn.Conv2d(input_channel, 16, kernel_size=5, stride=2, padding=2),
                torch.nn.ReLU(),
                torch.nn.Conv2d(16, 32, kernel_size=3, stride=feature_stride // 2, padding=1),
                torch.nn.ReLU(),
                torch.nn.Conv2d(32, output_channel, kernel_size=3, stride=1, padding=1),
            )

        def output_shape(self, input_shape):
            s = self._stride
            return [self._output_channel, (input_shape[1] + s - 1) // s, (input_shape[2] + s - 1) // s]

    setattr(obs_core, BACKBONE, LeanConv)


# ---- data --------------------------------------------------------------------------------
@dataclass
class Demo:
    """One demonstration: per-step images (T, H, W, 3) uint8, low-dim observations, actions (T, 7)."""

    images: np.ndarray
    eef_pos: np.ndarray
    gripper_qpos: np.ndarray
    actions: np.ndarray
    object_state: np.ndarray | None = None  # (T, n): what the encoder is pretrained to read off

    def __len__(self) -> int:
        return len(self.actions)
