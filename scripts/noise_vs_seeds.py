#!/usr/bin/env python
"""What more seeds would buy: the noise null and the oracle bracket as a function of seeds.

    scripts/noise_vs_seeds.py                       # every published setting, S = 2 3 5 10 20
    scripts/noise_vs_seeds.py --settings stack-replay-k3-orig --seeds 5 10
    scripts/noise_vs_seeds.py --null-bias           # how low the plug-in null sits (docs/metrics.md)

For each setting and seed count S it prints, as a Markdown table:

- the noise null at S seeds (`leaderboard.metrics.noise.null_from_rates` on the setting's own
  per-scene success rates): its mean and 95th percentile, i.e. how much `oracle - random`
  execution noise alone produces;
- the oracle bracket's width (plain oracle minus the cross-fitted one) and `headroom_cf` at
  S seeds, by resampling: each repetition draws S Bernoulli outcomes per cell from the cell's
  observed 5-seed mean (a plug-in truth, itself noisy, so the widths are upper-end estimates);
- the cost in episodes: K x Q x S for policy settings, K x states x S for Replay (camera-blind:
  one execution per physical state and seed labels all its renders).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmark_data.frozen import load_transfer  # noqa: E402
from benchmark_data.registry import SETTINGS  # noqa: E402
from leaderboard.metrics.noise import null_from_rates, oracle_cf_by_scene  # noqa: E402


def measure(setting_id: str, seeds: list[int], repetitions: int, n_null: int, seed: int) -> list[str]:
    """One Markdown row per seed count for `setting_id`."""
    data = load_transfer(setting_id)
    outcomes = data.outcomes
    k, q, _ = outcomes.shape
    truth = outcomes.mean(axis=2)
    rates = truth.mean(axis=0)
    n_states = len(np.unique(np.asarray(data.scenes.state_ids)))
    setting = SETTINGS[setting_id]
    per_seed = k * (n_states if setting.mechanism.value == "replay" else q)
    rng = np.random.default_rng(seed)
    rows = []
    for n_seeds in seeds:
        null = null_from_rates(rates, k, n_seeds, n_null, rng)
        widths, headrooms = [], []
        for _ in range(repetitions):
            draw = (rng.random((k, q, n_seeds)) < truth[:, :, None]).astype(np.int8)
            y = draw.mean(axis=2)
            cf = oracle_cf_by_scene(draw).mean()
            widths.append(y.max(axis=0).mean() - cf)
            headrooms.append(cf - y.mean())
        rows.append(f"| {setting_id} | {n_seeds} | {null.mean():.3f} | {np.percentile(null, 95):.3f} "
                    f"| {np.mean(widths):.3f} | {np.mean(headrooms):.3f} ± {np.std(headrooms):.3f} "
                    f"| {per_seed * n_seeds:,} |")
    return rows


def null_bias(tensors: int, seed: int) -> str:
    """Simulated tensors whose K = 3 experiences really are interchangeable (200 scenes with
    success rates drawn in 0.2-0.9, 5 seeds): the mean observed oracle - random, the mean of
    the noise null built from each tensor's own rates, and the cross-fitted headroom."""
    rng = np.random.default_rng(seed)
    rates = rng.uniform(0.2, 0.9, 200)
    observed, null, headroom = [], [], []
    for _ in range(tensors):
        draw = (rng.random((3, 200, 5)) < rates[None, :, None]).astype(np.int8)
        y = draw.mean(axis=2)
        observed.append(y.max(axis=0).mean() - y.mean())
        null.append(null_from_rates(y.mean(axis=0), 3, 5, 50, rng).mean())
        headroom.append(oracle_cf_by_scene(draw).mean() - y.mean())
    return (f"{tensors} interchangeable tensors: observed oracle - random {np.mean(observed):.3f} "
            f"(sd {np.std(observed):.3f}); plug-in null {np.mean(null):.3f}; headroom_cf "
            f"{np.mean(headroom):.3f} (sd {np.std(headroom):.3f})\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--settings", nargs="*", default=None, help="setting ids (default: every published one)")
    parser.add_argument("--seeds", nargs="*", type=int, default=[2, 3, 5, 10, 20])
    parser.add_argument("--repetitions", type=int, default=100, help="resampled tensors per seed count")
    parser.add_argument("--n-null", type=int, default=500, help="noise-null resamples per seed count")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--null-bias", action="store_true",
                        help="only simulate how low the plug-in noise null sits (300 tensors)")
    args = parser.parse_args(argv)
    if args.null_bias:
        sys.stdout.write(null_bias(300, args.seed))
        return 0
    ids = args.settings or [s.id for s in SETTINGS.values() if not s.sealed]
    unknown = sorted(set(ids) - set(SETTINGS))
    if unknown:
        parser.error(f"unknown setting ids: {', '.join(unknown)}")
    if any(s < 2 for s in args.seeds):
        parser.error("--seeds: every seed count must be at least 2 (the cross-fit needs two)")
    lines = ["| setting | seeds S | noise null: mean | noise null: 95th percentile "
             "| bracket width (oracle - cross-fitted) | headroom_cf (mean ± sd) | episodes |",
             "|---|---|---|---|---|---|---|"]
    for setting_id in ids:
        lines += measure(setting_id, args.seeds, args.repetitions, args.n_null, args.seed)
    sys.stdout.write("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
