"""Write the synthetic toy matrix used by the README quickstart of `expaudit audit`.

SYNTHETIC DATA FOR TRYING THE CLI, NOT BENCHMARK DATA: the outcomes are coin
flips from a made-up model, not robot rollouts.

The model: 10 experiences with different mean quality, 12 physical states
rendered under 5 appearance draws (60 scenes), 5 seeds. A scene's success
probability is the experience's quality plus the state's difficulty plus a
small per-pair term. The scores mimic a visual-similarity rule with a "hub":
experience e03 looks similar to every scene, so the rule concentrates on it.

Usage: python examples/toy/make_toy.py [OUTPUT_DIR]   (default: this folder)
"""

from __future__ import annotations

import csv
import sys
from pathlib import Path

import numpy as np

N_EXPERIENCES, N_STATES, N_DRAWS, N_SEEDS = 10, 12, 5, 5
SEED = 20240611


def _write(path: Path, header: list[str], rows: list[list]) -> None:
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(header)
        writer.writerows(rows)


def make_toy(out_dir: Path) -> None:
    """Write experiences.csv, scenes.csv, outcomes.csv, scores.csv and selections.csv into `out_dir`.

    `selections.csv` is the same rule as a selection-only submission (its argmax per scene).
    """
    rng = np.random.default_rng(SEED)
    experiences = [f"e{i:02d}" for i in range(N_EXPERIENCES)]
    states = [f"state{j:02d}" for j in range(N_STATES)]
    layout = rng.integers(0, 4, N_STATES)
    scenes = [
        (f"{state}-d{d}", state, int(layout[j]), d) for j, state in enumerate(states) for d in range(N_DRAWS)
    ]
    quality = np.linspace(-1.0, 1.2, N_EXPERIENCES)[rng.permutation(N_EXPERIENCES)]
    difficulty = np.repeat(rng.normal(0.0, 1.0, N_STATES), N_DRAWS) - 0.3 * np.tile(
        np.arange(N_DRAWS) > 0, N_STATES
    )
    pair = rng.normal(0.0, 0.6, (N_EXPERIENCES, len(scenes)))
    p = 1.0 / (1.0 + np.exp(-(quality[:, None] + difficulty[None, :] + pair)))
    outcomes = (rng.random((N_EXPERIENCES, len(scenes), N_SEEDS)) < p[..., None]).astype(int)
    similarity = 0.5 * pair + rng.normal(0.0, 0.8, pair.shape)
    similarity[3] += 1.0  # the hub
    out_dir.mkdir(parents=True, exist_ok=True)
    _write(out_dir / "experiences.csv", ["experience_id"], [[e] for e in experiences])
    _write(
        out_dir / "scenes.csv",
        ["scene_id", "state_id", "layout_level", "appearance_draw"],
        [list(s) for s in scenes],
    )
    _write(
        out_dir / "outcomes.csv",
        ["experience_id", "scene_id", "seed", "success"],
        [
            [e, s[0], seed, int(outcomes[i, q, seed])]
            for i, e in enumerate(experiences)
            for q, s in enumerate(scenes)
            for seed in range(N_SEEDS)
        ],
    )
    _write(
        out_dir / "scores.csv",
        ["scene_id", "experience_id", "score"],
        [
            [s[0], e, f"{similarity[i, q]:.4f}"]
            for q, s in enumerate(scenes)
            for i, e in enumerate(experiences)
        ],
    )
    picks = np.argmax(np.round(similarity, 4), axis=0)
    _write(
        out_dir / "selections.csv",
        ["scene_id", "experience_id"],
        [[s[0], experiences[picks[q]]] for q, s in enumerate(scenes)],
    )


if __name__ == "__main__":
    make_toy(Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).parent)
