"""The gates of a mechanism-2 policy and the protocol's go / no-go (docs/policy_protocol.md).

Read by the training phases (`recipe_policies`), by cell generation (which asks `check_go`
before a cell of these policies runs) and by adoption of the staged policies: plain data,
no simulator, so the readers load neither MuJoCo nor torch.
"""

from __future__ import annotations

import json
from pathlib import Path

from benchmark_data.paths import root_or_default
from expaudit.errors import InvalidInput

VALIDATION = {"stack": "stack-val", "door": "door-val"}
"""The validation query set every gate is measured on, per task."""
GATE_SEED = 0
"""Execution-noise seed of the gate episodes."""
OWN_EPISODES = 20
"""Own demonstration layouts the first gate runs (n >= 20)."""
GATE_BARS = {"own": 0.8, "draw 0": 0.5, "draws 1-4": 0.2, "draw gap": 0.1}
"""The protocol's bars: success on its own layouts (both mechanisms), draw 0 and draws 1-4
(Policy), the largest gap between draw 0 and draws 1-4 (Policy+DR)."""
GATE_MIN_N = {"own": 20, "draw 0": 40, "draws 1-4": 160, "draw gap": 200}
"""Episodes a gate needs to count: fewer (a smoke run) never pass."""
GO_BAR = 0.2
"""Validation random success of the three retrained Stack Policy policies below which no cell
of the new policies is generated (the protocol's go / no-go)."""

def read_episodes(path: Path, seed: int) -> dict[str, dict]:
    """Episodes already run (scene id -> row) of an episodes file; none when it is absent. Every
    row must be of noise seed `seed` (rows written before rows named their seed count as it)."""
    if not path.exists():
        return {}
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    other = next((row for row in rows if row.get("seed", seed) != seed), None)
    if other is not None:
        raise InvalidInput(f"{path}: episode {other['scene_id']} has seed {other['seed']}, not {seed}")
    return {row["scene_id"]: row for row in rows}


def summarise(episodes: dict, items) -> dict:
    """Successes and episodes per group, and per validation layout level."""
    groups: dict[str, list[int]] = {}
    levels: dict[str, list[int]] = {}
    for group, scene_id, _, _ in items:
        if scene_id not in episodes:
            continue
        success = int(episodes[scene_id]["success"])
        g = groups.setdefault(group, [0, 0])
        g[0] += success
        g[1] += 1
        if group != "own":
            level = levels.setdefault(f"level {int(scene_id.split('-s')[1][:2]) // 10}", [0, 0])
            level[0] += success
            level[1] += 1
    return {"groups": groups, "validation_levels": levels}


def judge_gates(mechanism: str, groups: dict[str, list[int]]) -> dict[str, dict]:
    """Each gate of the protocol for `mechanism`: its measured value with n, its bar, passed or not
    (a gate with fewer episodes than `GATE_MIN_N` does not pass)."""
    def rate(name):
        s, n = groups[name]
        return s / n

    def gate(name, value, n, bar):
        passed = value >= GATE_BARS[name] if bar == "at_least" else value <= GATE_BARS[name] + 1e-12
        return {"value": round(value, 4), "n": n, bar: GATE_BARS[name], "min_n": GATE_MIN_N[name],
                "passed": bool(passed and n >= GATE_MIN_N[name])}

    gates = {"own": gate("own", rate("own"), groups["own"][1], "at_least")}
    if mechanism == "policy":
        for name in ("draw 0", "draws 1-4"):
            gates[name] = gate(name, rate(name), groups[name][1], "at_least")
    else:
        gates["draw gap"] = gate("draw gap", abs(rate("draw 0") - rate("draws 1-4")),
                                 groups["draw 0"][1] + groups["draws 1-4"][1], "at_most")
    return gates


def validation_rate(record: dict) -> float:
    """Validation random success of a frozen policy: its successes over the validation scenes
    (every draw), from its training.json."""
    groups = record["validation"]["groups"]
    return (groups["draw 0"][0] + groups["draws 1-4"][0]) / (groups["draw 0"][1] + groups["draws 1-4"][1])


def go_no_go(records: list[dict]) -> tuple[float | None, bool]:
    """(validation random success of the Stack Policy policies, whether generating cells may go):
    go when all three are trained with their gates measured and the mean reaches `GO_BAR`."""
    stack = [r for r in records if r["task"] == "stack" and r["mechanism"] == "policy" and "gates" in r]
    if not stack:
        return None, False
    mean = sum(validation_rate(r) for r in stack) / len(stack)
    return mean, len(stack) == 3 and mean >= GO_BAR


def staged_records(root) -> list[dict]:
    """The training.json of every mechanism-2 policy under `root`."""
    records = []
    for path in sorted((root_or_default(root) / "policies").glob("*/*/training.json")):
        record = json.loads(path.read_text())
        if "gates" in record:
            records.append(record)
    return records


def check_go(root) -> None:
    """Raise `InvalidInput` unless the go / no-go under `root` says go (cells of mechanism-2
    policies are generated only then, as pre-registered)."""
    mean, go = go_no_go(staged_records(root))
    if not go:
        state = ("no Stack Policy policy with gates" if mean is None
                 else f"validation random success {mean:.3f} of the Stack Policy policies trained")
        raise InvalidInput(f"no cell of the new policies before the go / no-go says go "
                           f"(docs/policy_protocol.md): {state}; all three at >= {GO_BAR} are needed "
                           f"(scripts/policy_gates.py)")
