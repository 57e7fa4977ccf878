"""Reading the frozen policies: where each policy's files are, whether it is trained, how
it was made and which of its gates it failed (the generation layer trains them).

Files in `policies/<mechanism>/<experience_id>/`: `weights.pt`, `spec.json` and
`training.json` (demonstration plans, tries, training curve, code version; from version 2
on, the gates of `docs/policy_protocol.md` measured on the validation set).
"""

from __future__ import annotations

import json
from pathlib import Path

from benchmark_data.paths import root_or_default
from benchmark_data.registry import SETTINGS, Mechanism
from expaudit.errors import DataNotFound, InvalidInput

POLICY_MECHANISMS = (Mechanism.POLICY, Mechanism.POLICY_DR)
"""The mechanisms whose cells are run by a frozen policy."""
ENCODER_MECHANISM = Mechanism.POLICY_DR.value
"""The policies whose visual encoder the policy_encoder reference rule reads."""
MECHANISM_NAMES = {Mechanism.POLICY.value: "Policy", Mechanism.POLICY_DR.value: "Policy+DR"}
"""How a policy mechanism is named in the failed-gate lines the pages show."""
GATE_SIDES = {"at_least": "below", "at_most": "above"}
"""A gate's bar field in training.json, and on which side of the bar a failing value lies."""


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


def failed_gates(setting, root=None) -> tuple[str, ...]:
    """One line per gate a policy of `setting` failed (`docs/policy_protocol.md`: a setting is
    published with which gates failed and by how much), from the policies under `root`
    (default: the frozen root); nothing for a setting not run by policies, an untrained policy
    or one made before the gates (no "gates" in its training.json)."""
    if setting.mechanism not in POLICY_MECHANISMS:
        return ()
    mechanism = setting.mechanism_id
    lines = []
    for eid in setting.experience_ids:
        if not is_trained(mechanism, eid, root):
            continue
        where = policy_dir(mechanism, eid, root) / "training.json"
        for name, gate in read_training(mechanism, eid, root).get("gates", {}).items():
            line = _failed_gate(f"{eid} {MECHANISM_NAMES[mechanism]}", name, gate, where)
            if line is not None:
                lines.append(line)
    return tuple(lines)


def _failed_gate(policy: str, name: str, gate: dict, where: Path) -> str | None:
    """"<policy>: <gate> <value> (n <n>), <how it missed>", or None for a passed gate."""
    try:
        passed, value, n, min_n = gate["passed"], gate["value"], gate["n"], gate["min_n"]
    except KeyError as exc:
        raise InvalidInput(f"{where}: gate {name!r} lacks field {exc.args[0]!r}") from None
    side = next((s for s in GATE_SIDES if s in gate), None)
    if side is None:
        raise InvalidInput(f"{where}: gate {name!r} has neither field 'at_least' nor 'at_most'")
    if passed:
        return None
    bar = gate[side]
    off_bar = value < bar if side == "at_least" else value > bar + 1e-12  # judge_gates' tolerance
    missed = [f"{GATE_SIDES[side]} its gate {bar:.2f}"] if off_bar else []
    if n < min_n:
        missed.append(f"n below the {min_n} episodes its gate needs")
    # an at_least gate bounds a success rate, an at_most gate the gap between two of them
    measured = f"{name} success" if side == "at_least" else name
    return (f"{policy}: {measured} {_value_text(value, bar)} (n {n}), "
            f"{' and '.join(missed) or 'recorded as failed'}")


def _value_text(value: float, bar: float) -> str:
    """The value to two places, or four where two would read as the bar itself."""
    return f"{value:.4f}" if f"{value:.2f}" == f"{bar:.2f}" else f"{value:.2f}"
