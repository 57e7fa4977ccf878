"""The image policies of policy mechanism 2 (docs/policy_protocol.md): two cameras, frozen encoders, cloning on cached features.

Still robomimic's BC-RNN cloned from images, arranged so that many cloning steps are cheap on
a CPU: one encoder per camera pretrained and frozen, each frame's features computed once
(`encode`), BC-RNN trained on them, and optionally random crops of the agent view (lever 4).
`RecipePolicy` holds a policy (`save` / `load`: a state dict and `spec.json`); `RecipeActor`
runs it in `simulator.policy_rollout`'s episode loop. The levers are in
docs/policy_protocol.md, "The recipe: levers, in order".
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from expaudit.errors import InvalidInput
from simulator.policy_model import ACTION_DIM, BACKBONE, SEQUENCE_LENGTH, _register_backbone
from simulator.robomimic_compat import import_robomimic, quiet
from simulator.wrist_camera import split

MECHANISM_VERSION = 2
"""The policy mechanism version (`simulator.provenance.POLICY_MECHANISM`) these policies are; their
spec.json says so as `policy_mechanism`."""
CAMERAS = ("agentview", "eye_in_hand")
FEATURE_KEYS = {"agentview": "agentview_features", "eye_in_hand": "eye_in_hand_features"}
LOW_DIM = {"robot0_eef_pos": 3, "robot0_gripper_qpos": 2}
OBJECT_POSITIONS = {"stack": 2, "door": 1}
"""How many leading 3-vectors of a task's object state are positions (Stack: both cubes;
Door: the handle; the rest, hinge and latch, are angles)."""


@dataclass(frozen=True)
class RecipeSpec:
    """The network and its training (stored beside the weights)."""

    image_size: int = 64
    feature_dim: int = 64
    keypoints: int = 32
    feature_stride: int = 4
    hidden_dim: int = 128
    rnn_layers: int = 2
    learning_rate: float = 1e-3
    pretrain_steps: int = 4000
    pretrain_batch: int = 64
    train_steps: int = 20000
    batch_size: int = 64
    seed: int = 0
    crop_size: int = 0
    """Side of the agent view's random crops in pixels (robomimic's CropRandomizer); 0: no crop."""
    crops_per_frame: int = 1
    """Random crops whose features are cached per agent-view frame (with `crop_size`)."""

    def to_json(self) -> str:
        return json.dumps({**asdict(self), "policy_mechanism": MECHANISM_VERSION}, sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> "RecipeSpec":
        """The spec of a spec.json; one written before `policy_mechanism` was recorded (a recipe
        trial's work folder) counts as version 2, the only one with this spec."""
        fields = json.loads(text)
        version = fields.pop("policy_mechanism", MECHANISM_VERSION)
        if version != MECHANISM_VERSION:
            raise InvalidInput(f"spec.json: policy_mechanism {version!r} is not {MECHANISM_VERSION}: "
                               f"not a two-camera policy")
        return cls(**fields)


# ---- encoders ----------------------------------------------------------------------------
def input_size(spec: RecipeSpec, camera: str) -> int:
    """Side of the images a camera's encoder reads: the crop for a cropped agent view."""
    return spec.crop_size if camera == "agentview" and spec.crop_size else spec.image_size


def random_crops(images: np.ndarray, size: int, rng: np.random.Generator) -> np.ndarray:
    """One random `size` x `size` crop of each frame of `images` (N, H, W, 3)."""
    n, h, w = images.shape[:3]
    top = rng.integers(h - size + 1, size=n)
    left = rng.integers(w - size + 1, size=n)
    rows = top[:, None] + np.arange(size)[None, :]
    cols = left[:, None] + np.arange(size)[None, :]
    return images[np.arange(n)[:, None, None], rows[:, :, None], cols[:, None, :]]


def centre_crop(images: np.ndarray, size: int) -> np.ndarray:
    """The centre `size` x `size` crop of each frame (what an episode reads)."""
    top, left = (images.shape[1] - size) // 2, (images.shape[2] - size) // 2
    return images[:, top:top + size, left:left + size]


def build_encoder(spec: RecipeSpec, camera: str):
    """A fresh robomimic VisualCore with expaudit's LeanConv backbone (seeded by the caller)."""
    rm = import_robomimic()
    _register_backbone(rm)
    import robomimic.models.obs_core as obs_core

    return obs_core.VisualCore(
        input_shape=[3, input_size(spec, camera), input_size(spec, camera)], backbone_class=BACKBONE,
        backbone_kwargs={"output_channel": 32, "feature_stride": spec.feature_stride},
        pool_class="SpatialSoftmax",
        pool_kwargs={"num_kp": spec.keypoints, "learnable_temperature": False, "temperature": 1.0,
                     "noise_std": 0.0},
        feature_dimension=spec.feature_dim)


def pretrain_targets(task: str, camera: str, object_state: np.ndarray, eef_pos: np.ndarray) -> np.ndarray:
    """What an encoder learns to read off a frame: world object positions (agent view) or
    positions relative to the hand (wrist view); angles as they are."""
    if camera == "agentview":
        return object_state
    out = np.array(object_state, dtype=np.float64, copy=True)
    for k in range(OBJECT_POSITIONS[task]):
        out[:, 3 * k:3 * k + 3] -= eef_pos
    return out


def _as_input(images: np.ndarray):
    import torch

    return torch.from_numpy(np.ascontiguousarray(images)).permute(0, 3, 1, 2).float() / 255.0


def pretrain(core, images: np.ndarray, targets: np.ndarray, spec: RecipeSpec, seed: int,
             log=lambda step, loss: None, crop: int = 0) -> list[tuple[int, float]]:
    """Regress the standardised `targets` (N, k) from single frames `images` (N, H, W, 3) through a
    linear head on the encoder's features (each frame a random `crop` when given); returns the
    curve [(step, mean loss)]."""
    import torch

    targets = np.asarray(targets, dtype=np.float64)
    varying = targets.std(axis=0) > 1e-4
    targets = targets[:, varying]
    targets = ((targets - targets.mean(axis=0)) / targets.std(axis=0)).astype(np.float32)
    torch.manual_seed(seed)
    head = torch.nn.Linear(spec.feature_dim, targets.shape[1])
    optimizer = torch.optim.Adam(list(core.parameters()) + list(head.parameters()), lr=spec.learning_rate)
    rng = np.random.default_rng(seed)
    curve, window = [], []
    core.train()
    for step in range(1, spec.pretrain_steps + 1):
        idx = rng.integers(len(images), size=spec.pretrain_batch)
        batch = random_crops(images[idx], crop, rng) if crop else images[idx]
        loss = torch.nn.functional.mse_loss(head(core(_as_input(batch))), torch.from_numpy(targets[idx]))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        window.append(float(loss.item()))
        if step % 100 == 0 or step == spec.pretrain_steps:
            curve.append((step, float(np.mean(window))))
            log(step, curve[-1][1])
            window = []
    core.eval()
    for param in core.parameters():
        param.requires_grad_(False)
    return curve


def encode(core, images: np.ndarray, chunk: int = 512) -> np.ndarray:
    """Features (N, feature_dim) float32 of frames (N, H, W, 3), in eval mode, no gradients."""
    import torch

    core.eval()
    out = []
    with torch.no_grad():
        for i in range(0, len(images), chunk):
            out.append(core(_as_input(images[i:i + chunk])).numpy())
    return np.concatenate(out).astype(np.float32)


# ---- behaviour cloning on features ---------------------------------------------------------
def _obs_sizes(spec: RecipeSpec) -> dict[str, int]:
    return {**LOW_DIM, **{FEATURE_KEYS[c]: spec.feature_dim for c in CAMERAS}}


def build_bc_rnn(spec: RecipeSpec):
    """robomimic's BC-RNN over the low-dim observations and the cached image features."""
    import torch

    rm = import_robomimic()
    config = rm.config_factory("bc")
    sizes = _obs_sizes(spec)
    with config.values_unlocked():
        config.algo.rnn.enabled = True
        config.algo.rnn.horizon = SEQUENCE_LENGTH
        config.algo.rnn.hidden_dim = spec.hidden_dim
        config.algo.rnn.num_layers = spec.rnn_layers
        config.algo.gmm.enabled = False
        config.algo.actor_layer_dims = ()
        config.algo.optim_params.policy.learning_rate.initial = spec.learning_rate
        config.observation.modalities.obs.low_dim = list(sizes)
        config.observation.modalities.obs.rgb = []
        config.train.seq_length = SEQUENCE_LENGTH
        config.train.batch_size = spec.batch_size
    obs_utils = rm.obs_utils
    others = dict(obs_utils.OBS_KEYS_TO_MODALITIES or {})
    with quiet():
        obs_utils.initialize_obs_utils_with_config(config)
    torch.manual_seed(spec.seed)
    algo = rm.algo_factory(algo_name="bc", config=config, obs_key_shapes={k: [n] for k, n in sizes.items()},
                           ac_dim=ACTION_DIM, device=torch.device("cpu"))
    # robomimic's key -> modality mapping is global: keep the keys of networks built before in
    # the same process (robomimic's own config would otherwise drop them).
    mapping = {**others, **obs_utils.OBS_KEYS_TO_MODALITIES}
    by_modality: dict[str, list[str]] = {}
    for key, modality in mapping.items():
        by_modality.setdefault(modality, []).append(key)
    obs_utils.initialize_obs_modality_mapping_from_dict(by_modality)
    return algo


@dataclass
class FeatureDemos:
    """Every demonstration's frames concatenated: observations by key (N, n), actions (N, 7), and
    where each demonstration starts and ends."""

    obs: dict
    actions: np.ndarray
    starts: np.ndarray
    ends: np.ndarray


def standardise(obs: dict, stats: dict) -> dict:
    return {k: ((v - stats[k][0]) / stats[k][1]).astype(np.float32) for k, v in obs.items()}


def obs_stats(obs: dict) -> dict:
    """Mean and std (floored) of each observation key over every frame (and every cached crop)."""
    def axes(v):
        return tuple(range(v.ndim - 1))

    return {k: (v.mean(axis=axes(v)).astype(np.float32),
                np.maximum(v.std(axis=axes(v)), 1e-6).astype(np.float32)) for k, v in obs.items()}


def sample_sequences(data: FeatureDemos, rng: np.random.Generator, batch_size: int) -> dict:
    """A batch of (B, T, n) sequences, padded by repeating a demonstration's last frame; a key
    cached for several crops (N, C, n) gives one crop drawn per frame."""
    demo = rng.integers(len(data.starts), size=batch_size)
    start = data.starts[demo] + (rng.random(batch_size) * (data.ends[demo] - data.starts[demo])).astype(int)
    idx = np.minimum(start[:, None] + np.arange(SEQUENCE_LENGTH)[None, :], data.ends[demo][:, None] - 1)
    obs = {}
    for key, values in data.obs.items():
        picked = values[idx]
        if values.ndim == 3:
            crop = rng.integers(values.shape[1], size=idx.shape)
            picked = np.take_along_axis(picked, crop[:, :, None, None], axis=2)[:, :, 0]
        obs[key] = picked
    return {"obs": obs, "actions": data.actions[idx], "goal_obs": None}


def clone(algo, data: FeatureDemos, spec: RecipeSpec, log=lambda step, loss: None,
          log_every: int = 500) -> list[tuple[int, float]]:
    """Behaviour cloning on cached, standardised features; returns the curve [(step, mean loss)]."""
    import torch

    rng = np.random.default_rng(spec.seed)
    algo.set_train()
    curve, window = [], []
    for step in range(1, spec.train_steps + 1):
        raw = sample_sequences(data, rng, spec.batch_size)
        batch = {"obs": {k: torch.from_numpy(v) for k, v in raw["obs"].items()},
                 "actions": torch.from_numpy(raw["actions"].astype(np.float32)), "goal_obs": None}
        batch = algo.process_batch_for_training(batch)
        batch = algo.postprocess_batch_for_training(batch, obs_normalization_stats=None)
        info = algo.train_on_batch(batch, epoch=0, validate=False)
        window.append(float(info["losses"]["action_loss"].item()))
        if step % log_every == 0 or step == spec.train_steps:
            curve.append((step, float(np.mean(window))))
            log(step, curve[-1][1])
            window = []
    algo.set_eval()
    return curve


# ---- the policy ----------------------------------------------------------------------------
@dataclass
class RecipePolicy:
    spec: RecipeSpec
    encoders: dict  # camera -> VisualCore
    algo: object
    stats: dict  # observation key -> (mean, std)

    def save(self, directory: Path) -> Path:
        import torch

        directory.mkdir(parents=True, exist_ok=True)
        (directory / "spec.json").write_text(self.spec.to_json() + "\n")
        weights = {f"policy.{k}": v for k, v in self.algo.nets.state_dict().items()}
        for cam, core in self.encoders.items():
            weights.update({f"encoder.{cam}.{k}": v for k, v in core.state_dict().items()})
        for key, (mean, std) in self.stats.items():
            weights[f"stats.{key}.mean"] = torch.from_numpy(np.asarray(mean, np.float32))
            weights[f"stats.{key}.std"] = torch.from_numpy(np.asarray(std, np.float32))
        path = directory / "weights.pt"
        tmp = path.with_suffix(".pt.tmp")
        torch.save(weights, tmp)
        tmp.replace(path)
        return path

    @classmethod
    def load(cls, directory: Path) -> "RecipePolicy":
        import torch

        spec = RecipeSpec.from_json((directory / "spec.json").read_text())
        weights = torch.load(directory / "weights.pt", map_location="cpu", weights_only=True)
        algo = build_bc_rnn(spec)
        algo.nets.load_state_dict({k[len("policy."):]: v for k, v in weights.items() if k.startswith("policy.")})
        algo.set_eval()
        encoders = {}
        for cam in CAMERAS:
            core = build_encoder(spec, cam)
            prefix = f"encoder.{cam}."
            core.load_state_dict({k[len(prefix):]: v for k, v in weights.items() if k.startswith(prefix)})
            core.eval()
            encoders[cam] = core
        stats = {key: (weights[f"stats.{key}.mean"].numpy(), weights[f"stats.{key}.std"].numpy())
                 for key in _obs_sizes(spec)}
        return cls(spec, encoders, algo, stats)


class RecipeActor:
    """`simulator.policy_rollout`'s actor interface for a `RecipePolicy` on side-by-side frames."""

    def __init__(self, policy: RecipePolicy) -> None:
        self.policy = policy

    def reset(self) -> None:
        self.policy.algo.reset()

    def act(self, images: np.ndarray, eef_pos: np.ndarray, gripper_qpos: np.ndarray) -> np.ndarray:
        import torch

        views = dict(zip(CAMERAS, split(images)))
        if self.policy.spec.crop_size:
            views["agentview"] = centre_crop(views["agentview"], self.policy.spec.crop_size)
        obs = {"robot0_eef_pos": eef_pos, "robot0_gripper_qpos": gripper_qpos}
        obs.update({FEATURE_KEYS[c]: encode(self.policy.encoders[c], views[c]) for c in CAMERAS})
        obs = {k: torch.from_numpy(v) for k, v in standardise(obs, self.policy.stats).items()}
        with torch.no_grad():
            action = self.policy.algo.get_action(obs_dict=obs)
        return action.detach().cpu().numpy().astype(np.float64)


def feature_demos(demos, encoders: dict, spec: RecipeSpec | None = None) -> FeatureDemos:
    """Encode every frame of `demos` (side-by-side images) once (the agent view once per cached
    random crop when `spec.crop_size`); observations not yet standardised."""
    lengths = np.array([len(d) for d in demos])
    ends = np.cumsum(lengths)
    images = np.concatenate([d.images for d in demos])
    views = dict(zip(CAMERAS, split(images)))
    obs = {"robot0_eef_pos": np.concatenate([d.eef_pos for d in demos]).astype(np.float32),
           "robot0_gripper_qpos": np.concatenate([d.gripper_qpos for d in demos]).astype(np.float32)}
    obs.update({FEATURE_KEYS[c]: encode(encoders[c], views[c]) for c in CAMERAS
                if not (c == "agentview" and spec is not None and spec.crop_size)})
    if spec is not None and spec.crop_size:
        rng = np.random.default_rng(spec.seed + 20)
        crops = [encode(encoders["agentview"], random_crops(views["agentview"], spec.crop_size, rng))
                 for _ in range(spec.crops_per_frame)]
        obs[FEATURE_KEYS["agentview"]] = np.stack(crops, axis=1)  # (N, C, feature_dim)
    return FeatureDemos(obs, np.concatenate([d.actions for d in demos]).astype(np.float32), ends - lengths, ends)


def train_recipe(task: str, demos, spec: RecipeSpec, log=lambda line: None) -> tuple[RecipePolicy, dict]:
    """Pretrain both encoders, cache features, clone; returns (policy, curves)."""
    import torch

    torch.set_num_threads(1)
    eef = np.concatenate([d.eef_pos for d in demos])
    state = np.concatenate([d.object_state for d in demos])
    images = np.concatenate([d.images for d in demos])
    views = dict(zip(CAMERAS, split(images)))
    curves, encoders = {}, {}
    for i, cam in enumerate(CAMERAS):
        torch.manual_seed(spec.seed + 10 + i)
        core = build_encoder(spec, cam)
        curves[cam] = pretrain(core, views[cam], pretrain_targets(task, cam, state, eef), spec,
                               spec.seed + 1 + i,
                               log=lambda s, l, c=cam: s % 500 == 0 and log(f"encoder {c} step {s} loss {l:.4f}"),
                               crop=spec.crop_size if cam == "agentview" else 0)
        encoders[cam] = core
    del images, views
    data = feature_demos(demos, encoders, spec)
    stats = obs_stats(data.obs)
    data.obs = standardise(data.obs, stats)
    algo = build_bc_rnn(spec)
    curves["cloning"] = clone(algo, data, spec, log=lambda s, l: log(f"cloning step {s} loss {l:.5f}"))
    return RecipePolicy(spec, encoders, algo, stats), curves
