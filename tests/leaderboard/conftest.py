"""Fixtures of the audit engine's tests: small transfer matrices built from outcome tensors."""

import pytest


@pytest.fixture
def audit_data_factory():
    """Build a `TransferData` from an outcome tensor (K, Q, S) for audit tests.

    Scenes default to one state per scene, layout 0, draw 0; experiences are
    named e0..e{K-1} and scenes s0..s{Q-1}.
    """
    import numpy as np

    from leaderboard.matrix import SceneTable, TransferData

    def build(outcomes, states=None, layout=None, draws=None, experience_ids=None, scene_ids=None):
        outcomes = np.asarray(outcomes, dtype=np.int8)
        if outcomes.ndim == 2:
            outcomes = outcomes[:, :, None]
        k, q, _ = outcomes.shape
        return TransferData(
            experience_ids=tuple(experience_ids or (f"e{i}" for i in range(k))),
            scenes=SceneTable(
                scene_ids=tuple(scene_ids or (f"s{j}" for j in range(q))),
                state_ids=np.asarray(states if states is not None else [f"st{j}" for j in range(q)], dtype=object),
                layout_level=np.asarray(layout if layout is not None else np.zeros(q), dtype=np.int64),
                appearance_draw=np.asarray(draws if draws is not None else np.zeros(q), dtype=np.int64),
            ),
            outcomes=outcomes,
        )

    return build


@pytest.fixture
def audit_random_setting(audit_data_factory):
    """A seeded synthetic setting: K=12 experiences, 12 states x 5 draws, 5 seeds, with scores.

    Experience quality and scene difficulty both vary, so every metric is defined.
    """
    import numpy as np

    rng = np.random.default_rng(7)
    k, n_states, n_draws, n_seeds = 12, 12, 5, 5
    q = n_states * n_draws
    states = np.repeat([f"st{i}" for i in range(n_states)], n_draws)
    layout = np.repeat(rng.integers(0, 4, n_states), n_draws)
    draws = np.tile(np.arange(n_draws), n_states)
    p = np.clip(rng.random((k, 1)) * 0.7 + rng.random((1, q)) * 0.5 - 0.1, 0, 1)
    outcomes = (rng.random((k, q, n_seeds)) < p[..., None]).astype(np.int8)
    data = audit_data_factory(outcomes, states=states, layout=layout, draws=draws)
    scores = rng.normal(size=(k, q)) + 0.5 * p
    return data, scores
