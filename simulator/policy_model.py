"""The BC-RNN image policy: robomimic's config and algorithm factory, trained and run on the CPU.

One policy per experience. Inputs: the agent-view image (`simulator.policy_camera`,
64x64) through `LeanConv` (three small strided convolutions, about 5 M
multiply-adds per image, a sixth of robomimic's `ShallowConv`, so a policy
trains on one CPU core in minutes) with robomimic's spatial-softmax keypoint
head, plus the end-effector position and the finger joint positions;
a 2-layer LSTM over sequences of `SEQUENCE_LENGTH` steps; outputs robosuite's
OSC_POSE delta action (position / 5 cm, rotation vector / 0.5 rad, gripper).
The low-dim inputs are standardized with their demonstrations' mean and std
(robomimic's observation normalization, applied here because its sequence
batches are built here): raw, the fingers move by millimetres and the hand by
centimetres, and the network all but ignores them.

Weights are a plain state dict (`torch.save`), read back with
`weights_only=True`; the config travels as JSON beside them, so a policy
is rebuilt from data alone. Training is deterministic for a given seed and
thread count (one intra-op thread).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import numpy as np

from simulator.errors import BadLevel, ModelMismatch
from simulator.robomimic_compat import import_robomimic, quiet

IMAGE_KEY = "agentview_image"
LOW_DIM_KEYS = ("robot0_eef_pos", "robot0_gripper_qpos")
LOW_DIM_SIZES = {"robot0_eef_pos": 3, "robot0_gripper_qpos": 2}
STATS_PREFIX = "low_dim_stats."
"""State-dict keys of the low-dim normalization: `low_dim_stats.<key>.mean` / `.std`."""
ACTION_DIM = 7
SEQUENCE_LENGTH = 10
"""Training sequence length and the RNN horizon (robomimic resets the state every horizon steps)."""


@dataclass(frozen=True)
class PolicySpec:
    """Everything that defines a policy's network and its training (stored beside the weights)."""

    image_size: int = 64
    hidden_dim: int = 128
    rnn_layers: int = 2
    feature_dim: int = 64
    keypoints: int = 32
    learning_rate: float = 1e-3
    batch_size: int = 16
    train_steps: int = 6000
    pretrain_steps: int = 4000
    pretrain_batch: int = 64
    freeze_encoder: bool = True
    feature_stride: int = 4
    seed: int = 0

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> "PolicySpec":
        return cls(**json.loads(text))


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


def robomimic_config(spec: PolicySpec):
    """robomimic's BC config with the RNN enabled and expaudit's observation encoder."""
    rm = import_robomimic()
    _register_backbone(rm)
    config = rm.config_factory("bc")
    with config.values_unlocked():
        config.algo.rnn.enabled = True
        config.algo.rnn.horizon = SEQUENCE_LENGTH
        config.algo.rnn.hidden_dim = spec.hidden_dim
        config.algo.rnn.num_layers = spec.rnn_layers
        config.algo.gmm.enabled = False
        config.algo.actor_layer_dims = ()
        config.algo.optim_params.policy.learning_rate.initial = spec.learning_rate
        config.observation.modalities.obs.low_dim = list(LOW_DIM_KEYS)
        config.observation.modalities.obs.rgb = [IMAGE_KEY]
        rgb = config.observation.encoder.rgb
        rgb.core_class = "VisualCore"
        rgb.core_kwargs = {
            "feature_dimension": spec.feature_dim,
            "backbone_class": BACKBONE,
            "backbone_kwargs": {"output_channel": 32, "feature_stride": spec.feature_stride},
            "pool_class": "SpatialSoftmax",
            "pool_kwargs": {"num_kp": spec.keypoints, "learnable_temperature": False,
                            "temperature": 1.0, "noise_std": 0.0},
        }
        config.train.seq_length = SEQUENCE_LENGTH
        config.train.batch_size = spec.batch_size
    return config, rm


def build_policy(spec: PolicySpec, device: str = "cpu"):
    """A freshly initialised robomimic BC_RNN algorithm object for `spec` (seeded)."""
    import torch

    config, rm = robomimic_config(spec)
    with quiet():
        rm.obs_utils.initialize_obs_utils_with_config(config)
    shapes = {IMAGE_KEY: [3, spec.image_size, spec.image_size]}
    shapes.update({k: [LOW_DIM_SIZES[k]] for k in LOW_DIM_KEYS})
    torch.manual_seed(spec.seed)
    algo = rm.algo_factory(algo_name="bc", config=config, obs_key_shapes=shapes,
                           ac_dim=ACTION_DIM, device=torch.device(device))
    algo.low_dim_stats = identity_stats()
    return algo


# ---- low-dim normalization ---------------------------------------------------------------
LowDimStats = dict  # key -> (mean, std), float32 arrays of the key's size


def identity_stats() -> LowDimStats:
    """Normalization that leaves inputs unchanged (a policy stored without statistics)."""
    return {k: (np.zeros(LOW_DIM_SIZES[k], np.float32), np.ones(LOW_DIM_SIZES[k], np.float32))
            for k in LOW_DIM_KEYS}


def low_dim_stats(demos: list["Demo"]) -> LowDimStats:
    """Mean and std of each low-dim observation over every demonstration frame."""
    stats = {}
    for key, field in zip(LOW_DIM_KEYS, ("eef_pos", "gripper_qpos")):
        values = np.concatenate([getattr(d, field) for d in demos]).astype(np.float64)
        stats[key] = (values.mean(axis=0).astype(np.float32),
                      np.maximum(values.std(axis=0), 1e-6).astype(np.float32))
    return stats


def normalized(demo: "Demo", stats: LowDimStats) -> "Demo":
    """A demonstration with its low-dim observations standardized (images shared, not copied)."""
    (eef_mean, eef_std), (grip_mean, grip_std) = (stats[k] for k in LOW_DIM_KEYS)
    return replace(demo, eef_pos=(demo.eef_pos - eef_mean) / eef_std,
                   gripper_qpos=(demo.gripper_qpos - grip_mean) / grip_std)


def state_dict(algo) -> dict:
    """The policy's weights and its low-dim normalization (what is frozen and shipped)."""
    import torch

    weights = dict(algo.nets.state_dict())
    for key, (mean, std) in algo.low_dim_stats.items():
        weights[f"{STATS_PREFIX}{key}.mean"] = torch.from_numpy(np.asarray(mean, np.float32))
        weights[f"{STATS_PREFIX}{key}.std"] = torch.from_numpy(np.asarray(std, np.float32))
    return weights


def save_policy(algo, spec: PolicySpec, directory: Path) -> Path:
    """Write `weights.pt` (state dict) and `spec.json`; returns the weights path."""
    import torch

    directory.mkdir(parents=True, exist_ok=True)
    (directory / "spec.json").write_text(spec.to_json() + "\n")
    path = directory / "weights.pt"
    tmp = path.with_suffix(".pt.tmp")
    torch.save(state_dict(algo), tmp)
    tmp.replace(path)
    return path


def load_policy(directory: Path, device: str = "cpu"):
    """Rebuild a stored policy from `spec.json` and `weights.pt` (loaded with weights_only=True)."""
    import torch

    spec = PolicySpec.from_json((directory / "spec.json").read_text())
    algo = build_policy(spec, device)
    weights = torch.load(directory / "weights.pt", map_location=device, weights_only=True)
    stats = {name: weights.pop(name) for name in [n for n in weights if n.startswith(STATS_PREFIX)]}
    algo.nets.load_state_dict(weights)
    if stats:
        algo.low_dim_stats = {k: (stats[f"{STATS_PREFIX}{k}.mean"].cpu().numpy(),
                                  stats[f"{STATS_PREFIX}{k}.std"].cpu().numpy()) for k in LOW_DIM_KEYS}
    algo.set_eval()
    return algo, spec


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


def sample_batch(demos: list[Demo], rng: np.random.Generator, batch_size: int) -> dict:
    """A robomimic-style batch of sequences (B, T, ...), padded by repeating a demo's last step."""
    obs = {IMAGE_KEY: [], "robot0_eef_pos": [], "robot0_gripper_qpos": []}
    actions = []
    for _ in range(batch_size):
        demo = demos[int(rng.integers(len(demos)))]
        start = int(rng.integers(len(demo)))
        idx = np.minimum(np.arange(start, start + SEQUENCE_LENGTH), len(demo) - 1)
        obs[IMAGE_KEY].append(demo.images[idx])
        obs["robot0_eef_pos"].append(demo.eef_pos[idx])
        obs["robot0_gripper_qpos"].append(demo.gripper_qpos[idx])
        actions.append(demo.actions[idx])
    return {"obs": {k: np.stack(v) for k, v in obs.items()}, "actions": np.stack(actions),
            "goal_obs": None}


def _to_torch(batch: dict, device: str) -> dict:
    import torch

    out = {"obs": {k: torch.from_numpy(np.ascontiguousarray(v)).to(device)
                   for k, v in batch["obs"].items()},
           "actions": torch.from_numpy(batch["actions"].astype(np.float32)).to(device),
           "goal_obs": None}
    out["obs"] = {k: (v.float() if k != IMAGE_KEY else v) for k, v in out["obs"].items()}
    return out


def visual_core(algo):
    """The policy's image encoder (robomimic VisualCore: backbone, spatial softmax, projection)."""
    for module in algo.nets.modules():
        if type(module).__name__ == "VisualCore":
            return module
    raise ModelMismatch("the policy network has no VisualCore")


def pretrain_encoder(algo, demos: list[Demo], spec: PolicySpec, device: str = "cpu") -> list[tuple[int, float]]:
    """Teach the image encoder where the task's objects are before behaviour cloning.

    A linear head on the encoder's features regresses each frame's object state
    (standardised) from single frames; only the encoder keeps what it learned.
    Behaviour cloning alone leaves a small CPU budget too few updates to make the
    encoder localize a 4-pixel cube, and the policy then replays the mean path.
    Returns the curve [(step, mean loss)].
    """
    import torch

    core = visual_core(algo)
    images = np.concatenate([d.images for d in demos])
    targets = np.concatenate([d.object_state for d in demos]).astype(np.float64)
    varying = targets.std(axis=0) > 1e-4  # constant coordinates (a cube that never moves in z) carry nothing
    targets = targets[:, varying]
    targets = ((targets - targets.mean(axis=0)) / targets.std(axis=0)).astype(np.float32)
    torch.manual_seed(spec.seed + 1)
    head = torch.nn.Linear(spec.feature_dim, targets.shape[1]).to(device)
    params = list(core.parameters()) + list(head.parameters())
    optimizer = torch.optim.Adam(params, lr=spec.learning_rate)
    rng = np.random.default_rng(spec.seed + 1)
    curve, window = [], []
    core.train()
    for step in range(1, spec.pretrain_steps + 1):
        idx = rng.integers(len(images), size=spec.pretrain_batch)
        x = torch.from_numpy(images[idx]).to(device).permute(0, 3, 1, 2).float() / 255.0
        loss = torch.nn.functional.mse_loss(head(core(x)), torch.from_numpy(targets[idx]).to(device))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        window.append(float(loss.item()))
        if step % 100 == 0 or step == spec.pretrain_steps:
            curve.append((step, float(np.mean(window))))
            window = []
    return curve


def train(demos: list[Demo], spec: PolicySpec, *, device: str = "cpu", log_every: int = 100,
          log=lambda step, loss: None):
    """Train a fresh policy on `demos`; returns (algo, curve) with curve = [(step, mean loss)].

    With `spec.pretrain_steps` and demos that carry `object_state`, the encoder
    is pretrained first (`pretrain_encoder`; its curve is logged with negative
    steps) and, with `spec.freeze_encoder`, kept fixed during behaviour cloning.
    """
    import torch

    torch.set_num_threads(1)
    algo = build_policy(spec, device)
    algo.low_dim_stats = low_dim_stats(demos)
    demos = [normalized(d, algo.low_dim_stats) for d in demos]
    curve, window = [], []
    if spec.pretrain_steps and all(d.object_state is not None for d in demos):
        for step, loss in pretrain_encoder(algo, demos, spec, device):
            curve.append((-step, loss))
            log(-step, loss)
        if spec.freeze_encoder:
            for param in visual_core(algo).parameters():
                param.requires_grad_(False)
    algo.set_train()
    rng = np.random.default_rng(spec.seed)
    for step in range(1, spec.train_steps + 1):
        batch = _to_torch(sample_batch(demos, rng, spec.batch_size), device)
        batch = algo.process_batch_for_training(batch)
        batch = algo.postprocess_batch_for_training(batch, obs_normalization_stats=None)
        info = algo.train_on_batch(batch, epoch=0, validate=False)
        window.append(float(info["losses"]["action_loss"].item()))
        if step % log_every == 0 or step == spec.train_steps:
            curve.append((step, float(np.mean(window))))
            log(step, curve[-1][1])
            window = []
    algo.set_eval()
    return algo, curve


# ---- acting ------------------------------------------------------------------------------
class PolicyActor:
    """Runs a policy on a batch of environments in lockstep, keeping robomimic's RNN state.

    `act` takes the current observations of `n` environments and returns (n, 7)
    actions. The CPU runner steps one environment per actor (see
    `simulator.policy_rollout` on why), a GPU runner many.
    """

    def __init__(self, algo, device: str = "cpu") -> None:
        self.algo = algo
        self.device = device
        self._obs_utils = import_robomimic().obs_utils

    def reset(self) -> None:
        self.algo.reset()

    def act(self, images: np.ndarray, eef_pos: np.ndarray, gripper_qpos: np.ndarray) -> np.ndarray:
        import torch

        (eef_mean, eef_std), (grip_mean, grip_std) = (self.algo.low_dim_stats[k] for k in LOW_DIM_KEYS)
        eef = (eef_pos - eef_mean) / eef_std
        grip = (gripper_qpos - grip_mean) / grip_std
        obs = {IMAGE_KEY: torch.from_numpy(np.ascontiguousarray(images)).to(self.device),
               "robot0_eef_pos": torch.from_numpy(eef.astype(np.float32)).to(self.device),
               "robot0_gripper_qpos": torch.from_numpy(grip.astype(np.float32)).to(self.device)}
        obs = self._obs_utils.process_obs_dict(obs)
        with torch.no_grad():
            action = self.algo.get_action(obs_dict=obs)
        return action.detach().cpu().numpy().astype(np.float64)
