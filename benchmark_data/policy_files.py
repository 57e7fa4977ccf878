"""Reading the frozen policies: where each policy's files are, whether it is trained, and how
it was made (the generation layer trains them).

Files in `policies/<mechanism>/<experience_id>/`: `weights.pt`, `spec.json` and
`training.json` (demonstration plans, tries, training curve, code version).
"""

from __future__ import annotations

import json
from pathlib import Path

from benchmark_data.paths import root_or_default
from benchmark_data.registry import SETTINGS, Mechanism
from expaudit.errors import DataNotFound

POLICY_MECHANISMS = (Mechanism.POLICY, Mechanism.POLICY_DR)
"""The mechanisms whose cells are run by a frozen policy."""
ENCODER_MECHANISM = Mechanism.POLICY_DR.value
"""The policies whose visual encoder the policy_encoder reference rule reads."""


class PolicyNotFoundError(DataNotFound, FileNotFoundError):
    """A policy's frozen files are missing."""


def policy_dir(mechanism: str, experience_id: str, root=None) -> Path:
    """`policies/<mechanism>/<experience_id>/` under `root` (default: the frozen root)."""
    return root_or_default(root) / "policies" / mechanism / experience_id


def encoder_features_path(task: str, root=None) -> Path:
    """`policies/policy_dr/encoder_features_<task>.parquet`: the policy_encoder rule's exported
    features of a task, under `root` (default: the frozen root)."""
    return root_or_default(root) / "policies" / ENCODER_MECHANISM / f"encoder_features_{task}.parquet"


def published_policy_settings() -> list:
    """The published (not sealed) settings run by policies, in registry order."""
    return [s for s in SETTINGS.values() if s.mechanism in POLICY_MECHANISMS and not s.sealed]


def policy_experiences() -> list[tuple[str, str, str]]:
    """(task, mechanism, experience id) of every policy the published settings use, in order."""
    seen, out = set(), []
    for setting in SETTINGS.values():
        if setting.mechanism not in POLICY_MECHANISMS:
            continue
        for eid in setting.experience_ids:
            key = (setting.task, setting.mechanism.value, eid)
            if key not in seen:
                seen.add(key)
                out.append(key)
    return out


def is_trained(mechanism: str, experience_id: str, root=None) -> bool:
    d = policy_dir(mechanism, experience_id, root)
    return all((d / name).exists() for name in ("weights.pt", "spec.json", "training.json"))


def policy_dirs(task: str, root=None) -> dict[tuple[str, str], str]:
    """(mechanism, experience id) -> directory, for every trained policy of a task."""
    return {(m, e): str(policy_dir(m, e, root)) for t, m, e in policy_experiences()
            if t == task and is_trained(m, e, root)}


def read_training(mechanism: str, experience_id: str, root=None) -> dict:
    path = policy_dir(mechanism, experience_id, root) / "training.json"
    if not path.exists():
        raise PolicyNotFoundError(f"{mechanism} policy of {experience_id!r}: {path} does not exist "
                                  f"(train it with `expaudit data train-policies`)")
    return json.loads(path.read_text())
