"""The paper's reported numbers, declared once: Table I, Table IV and the headline figures.

Every page that sets this benchmark beside the paper ("Beyond End-Task
Success: How to Audit Visual Experience Retrieval in Robotics") reads them
from here: the findings page and the generated pages of the Replay and
image-policy settings. Values are copied from the paper, never computed.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class TableIRow:
    """One row of the paper's Table I: the library-level numbers of a setting."""

    k: int
    best_fixed_advantage: float
    oracle: float
    random: float
    headroom: float
    oracle_top_pick_share: float


TABLE_I: dict[str, TableIRow] = {
    "stack-replay-k3-orig": TableIRow(3, 0.58, 0.80, 0.53, 0.110, 0.45),
    "stack-replay-k3-fresh": TableIRow(3, 0.45, 0.88, 0.63, 0.135, 0.38),
    "stack-replay-k10-a": TableIRow(10, 0.45, 0.82, 0.55, 0.150, 0.20),
    "stack-replay-k10-b": TableIRow(10, 0.51, 0.86, 0.62, 0.115, 0.20),
    "stack-replay-k50": TableIRow(50, 0.51, 0.83, 0.56, 0.130, 0.10),
    "door-policy-k3-orig": TableIRow(3, 0.36, 0.78, 0.64, 0.088, 0.41),
    "door-policydr-k3-orig": TableIRow(3, 0.55, 0.77, 0.61, 0.068, 0.50),
    "door-policy-k3-fresh": TableIRow(3, 0.30, 0.81, 0.66, 0.103, 0.47),
    "door-policydr-k3-fresh": TableIRow(3, 0.40, 0.82, 0.67, 0.092, 0.50),
}
"""Paper Table I by setting id (Sec. III); the Stack Policy settings have no row."""

STACK_REPLAY_SETTINGS = ("stack-replay-k3-orig", "stack-replay-k3-fresh", "stack-replay-k10-a",
                         "stack-replay-k10-b", "stack-replay-k50")
"""The Stack Replay settings of Table I, in the paper's order."""

R2_SCENE_K3 = {"stack-replay-k3-orig": 0.42, "stack-replay-k3-fresh": 0.45}
"""The paper's R_q^2 (Sec. VI) of each Replay K = 3 setting."""
R2_SCENE_K10_UP = (0.52, 0.57)
"""The paper's R_q^2 over the Replay K >= 10 settings, one range."""
R2_SCENE_RANGES = {"replay_k3": (min(R2_SCENE_K3.values()), max(R2_SCENE_K3.values())),
                   "replay_k10_up": R2_SCENE_K10_UP}
"""The same R_q^2 as ranges: Replay K = 3 and Replay K >= 10."""
R2_SCENE = {sid: (f"{R2_SCENE_K3[sid]:.2f}" if sid in R2_SCENE_K3
                  else f"{R2_SCENE_K10_UP[0]:.2f}-{R2_SCENE_K10_UP[1]:.2f}") for sid in STACK_REPLAY_SETTINGS}
"""The paper's R_q^2 as printed, per Stack Replay setting."""


@dataclass(frozen=True)
class TableIVRow:
    """One group of the paper's Table IV: pooled and within-query AUROC ranges over the visual rules.

    `pooled` and `within_query` are None where the paper has no row for the group.
    """

    group: str
    mechanism: str
    k: int
    pooled: tuple[float, float] | None
    within_query: tuple[float, float] | None


TABLE_IV: tuple[TableIVRow, ...] = (
    TableIVRow("Stack Replay, K=3", "replay", 3, None, None),
    TableIVRow("Stack Replay, K=10", "replay", 10, (0.70, 0.80), (0.35, 0.71)),
    TableIVRow("Stack Replay, K=50", "replay", 50, (0.71, 0.76), (0.45, 0.52)),
    TableIVRow("Image policy, K=3", "policy", 3, (0.68, 0.94), (0.26, 0.77)),
)
"""Paper Table IV, in its order; `mechanism` "policy" covers Policy and Policy+DR."""

HEADLINE = {
    "best_fixed_advantage": (0.30, 0.58),
    "headroom": (0.07, 0.15),
    "concentration_ratio": (1.5, 3.0),
    "sign_match": (69, 91),
    "policy_significant_negative": (12, 12),
    "replay_significant": {"above": 9, "below": 2},
    "appearance_larger": (9, 12),
    "inside_envelope": (42, 65),
    "within_lower": (62, 65),
    "within_k50": (0.45, 0.52),
    "pooled_k50": (0.71, 0.76),
}
"""The paper's headline figures each of the four results is shown beside."""

APPEARANCE_FAILURE_SHARE = {"stack": (0.26, 0.02), "door": None}
"""The paper's share of failures caused by appearance, (Policy, Policy+DR), per task.

The paper gives the figure for Stack only; for Door it reports that domain
randomization also degrades performance on layout changes, without a share.
"""
