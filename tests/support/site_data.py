"""A small synthetic leaderboard (a transfer matrix, audited reference rows and submissions,
setting infos) shared by the site's tests, the baselines' and the browser's."""

from __future__ import annotations

import numpy as np

from benchmark_data.registry import Setting
from leaderboard.audit import run_audit
from leaderboard.rules.baselines import (DISPLAY_NAMES, EMBEDDING_RULES, audit_baselines,
                                         baseline_submission_id)
from leaderboard.matrix import SceneTable, TransferData
from leaderboard.site.build import LeaderboardEntry, SettingInfo
from leaderboard.rules.structural import object_proximity, path_clearance


SETTING = "stack-replay-k10-a"
EMPTY_SETTING = "door-policy-k3-orig"


def make_data(k: int = 6, n_states: int = 40, n_draws: int = 5, n_seeds: int = 5,
              seed: int = 1) -> TransferData:
    """A transfer tensor with experience quality and scene-specific affinity."""
    rng = np.random.default_rng(seed)
    q = n_states * n_draws
    state = np.repeat(np.arange(n_states), n_draws)
    draw = np.tile(np.arange(n_draws), n_states)
    layout = state % 4
    quality = rng.uniform(0.2, 0.8, size=(k, 1))
    affinity = rng.normal(0.0, 0.25, size=(k, n_states))[:, state]
    p = np.clip(quality + affinity, 0.0, 1.0)
    outcomes = (rng.random((k, q, n_seeds)) < p[:, :, None]).astype(np.int8)
    scenes = SceneTable(
        scene_ids=tuple(f"s{s:02d}-d{d}" for s, d in zip(state, draw)),
        state_ids=state, layout_level=layout, appearance_draw=draw,
    )
    return TransferData(tuple(f"stack-e{i:03d}" for i in range(k)), scenes, outcomes)


def synthetic_scene_scores(data: TransferData) -> dict:
    """Structural scores of a small synthetic layout: 2 objects per scene, one box obstacle
    in every other state, straight-line paths; the image rules are not computed."""
    rng = np.random.default_rng(5)
    k, q = len(data.experience_ids), data.scenes.n_scenes
    base = rng.uniform(-0.2, 0.2, size=(k, 2, 3))
    query = rng.uniform(-0.2, 0.2, size=(q, 2, 3))
    obstacles = np.full((q, 6), np.nan)
    has_obstacle = data.scenes.state_ids % 2 == 0
    obstacles[has_obstacle] = (0.0, 0.0, 0.85, 0.03, 0.03, 0.05)
    paths = [[np.linspace(base[i, 0], query[s, 1], 20) for s in range(q)] for i in range(k)]
    scores = {"object_proximity": object_proximity(query, base),
              "path_clearance": path_clearance(paths, obstacles)}
    scores.update({name: "weights missing: synthetic setting has no images"
                   for name in EMBEDDING_RULES})
    return scores


def audit_scores(data: TransferData, scores: np.ndarray, selection_only: bool = False) -> dict:
    return run_audit(data, scores, selection_only=selection_only, n_shuffles=300,
                     n_bootstrap=300, seed=0).to_dict()


def make_entries(data: TransferData, setting_id: str = SETTING) -> list[LeaderboardEntry]:
    """Reference rows plus three submissions: a good ranker, a selection-only
    rule and an anti-ranker (chooses the worst experience per scene)."""
    y = data.success_matrix()
    noise = np.random.default_rng(7).normal(0, 0.3, y.shape)
    rows = [
        LeaderboardEntry(baseline_submission_id(setting_id, rule), setting_id, DISPLAY_NAMES[rule],
                         "baseline", "2026-01-01T00:00:00Z", report)
        for rule, report in audit_baselines(data, n_shuffles=300, n_bootstrap=300).items()
    ]
    picks = np.zeros_like(y)
    picks[2] = 1.0
    rows += [
        LeaderboardEntry("sub-good", setting_id, "noisy oracle <b>", "submission",
                         "2026-02-01T10:00:00Z", audit_scores(data, y + noise)),
        LeaderboardEntry("sub-pick", setting_id, "always e002", "submission",
                         "2026-02-02T10:00:00Z", audit_scores(data, picks, selection_only=True)),
        LeaderboardEntry("sub-anti", setting_id, "anti-ranker", "submission",
                         "2026-02-03T10:00:00Z", audit_scores(data, -y)),
    ]
    return rows


def make_settings() -> list[SettingInfo]:
    return [
        SettingInfo(Setting(SETTING, "stack", "replay", 10, "stack-orig"), 50000, 50000),
        SettingInfo(Setting(EMPTY_SETTING, "door", "policy", 3, "door-orig"), 1200, 15000),
    ]


HINDSIGHT = {baseline_submission_id(SETTING, rule) for rule in ("random", "oracle", "best_fixed")}
