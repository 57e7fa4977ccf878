"""A hidden (sealed) setting's ids and scores, for the tests that run its rollouts."""

from __future__ import annotations

import numpy as np
import pandas as pd

from tests.support.tiny_frozen import experience_ids


HIDDEN = "stack-replay-k10-hidden"


HIDDEN_STATES = ["stack-hidden-s00"]


def hidden_scores(root, seed: int) -> bytes:
    scenes = pd.read_parquet(root / "query_sets" / "stack-hidden" / "scenes.parquet")
    rng = np.random.default_rng(seed)
    rows = [{"scene_id": s, "experience_id": e, "score": float(rng.normal())}
            for s in scenes["scene_id"] for e in experience_ids(10)]
    return pd.DataFrame(rows).to_csv(index=False).encode()
