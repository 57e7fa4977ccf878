"""The policies behind the policy settings, as a docs table: how each was made and its gates.

One row per (task, mechanism, experience) the published settings use, read from the
policy's `spec.json` and `training.json` under a data root. A policy (mechanism 2,
`docs/policy_protocol.md`) records its validation episodes and the verdict of each gate.
"""

from __future__ import annotations

import json

from benchmark_data.policy_files import (MECHANISM_NAMES, is_trained, policy_dir, policy_experiences,
                                         read_training)
from expaudit.errors import InvalidInput
from simulator.provenance import policy_mechanism_of

__all__ = ["policies_table"]

GROUPS = ("own", "draw 0", "draws 1-4")
"""The validation episode groups each policy records, in the table's order."""


def _count(groups: dict, name: str, where) -> str:
    """"k/n = 0.xx" for one recorded episode group."""
    try:
        k, n = groups[name]
    except (KeyError, TypeError, ValueError):
        raise InvalidInput(f"{where}: validation.groups lacks a [successes, episodes] pair "
                           f"for {name!r}") from None
    return f"{k}/{n} = {k / n:.2f}" if n else f"{k}/{n}"


def _gates(gates, where) -> str:
    """"all pass", or the names of the failed gates."""
    if not isinstance(gates, dict) or not gates:
        raise InvalidInput(f"{where}: field 'gates' must name at least one gate, got {gates!r}")
    failed = []
    for name, gate in sorted(gates.items()):
        passed = gate.get("passed") if isinstance(gate, dict) else None
        if not isinstance(passed, bool):
            raise InvalidInput(f"{where}: gate {name!r} lacks a true/false field 'passed'")
        if not passed:
            failed.append(name)
    return "all pass" if not failed else "failed: " + ", ".join(failed)


def policies_table(root=None) -> str:
    """Markdown: one row per policy of the published settings under `root` (default: the
    frozen root), with its version, demonstrations, cloning steps, training minutes and
    validation episodes."""
    lines = ["| task | mechanism | experience | policy version | demonstrations | cloning steps "
             "| training min | own layouts | validation draw 0 | validation draws 1-4 | gates |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for task, mechanism, eid in policy_experiences():
        head = f"| {task} | {MECHANISM_NAMES[mechanism]} | {eid} "
        if not is_trained(mechanism, eid, root):
            lines.append(head + "| not trained | | | | | | | |")
            continue
        directory = policy_dir(mechanism, eid, root)
        version = policy_mechanism_of(str(directory))
        training = read_training(mechanism, eid, root)
        steps = json.loads((directory / "spec.json").read_text()).get("train_steps")
        train_s = training.get("train_wall_s")
        row = (head + f"| {version} | {training.get('n_demos', 'n/a')} "
               f"| {'n/a' if steps is None else f'{steps:,}'} "
               f"| {'n/a' if train_s is None else round(train_s / 60)} ")
        where = directory / "training.json"
        validation = training.get("validation")
        if not isinstance(validation, dict):
            raise InvalidInput(f"{where}: a version-{version} policy lacks field 'validation'")
        groups = validation.get("groups")
        lines.append(row + "| " + " | ".join(_count(groups, g, where) for g in GROUPS)
                     + f" | {_gates(training.get('gates'), where)} |")
    return "\n".join(lines)
