"""The Door policies' gates on version 2 of door-val (issue 38), beside the version-1 gates.

The recorded gates of the six Door policies were measured on door-val version 1, whose ajar
(level-2) states start with the latch inside the frame. Version 2 changes nine of them. The
policies stay as they are; `run_gate_episodes` runs, for each policy, the level-2 gate episodes
on version 1 (all ten states: their total, set beside the recorded level-2 successes, checks
that the re-run reproduces the gates, and the nine changed ones give the draw split the record
lacks) and the changed states' episodes on version 2, with the gates' seed and noise
(resumable journals, one line per episode). `gates_v2` swaps the changed states' episodes into
the recorded counts and judges the gates again; `record_gates_v2` writes the result into the
policy's training.json as `gates_v2`, leaving `gates` as measured.
"""

from __future__ import annotations

import json
from pathlib import Path

from benchmark_data.generation.query_set_build import validation_states
from benchmark_data.generation.recipe_gates import GATE_SEED, VALIDATION, judge_gates, read_episodes
from benchmark_data.policy_files import policy_dir
from benchmark_data.query_sets import N_DRAWS
from expaudit.errors import InternalError
from simulator.appearance import sample_draw
from simulator.door_sim import DoorSim
from simulator.policy_executor import load_actor, make_camera
from simulator.policy_rollout import HORIZON, noise_for, run_episode

TASK = "door"
MECHANISMS = ("policy", "policy_dr")
EXPERIENCES = ("door-e000", "door-e001", "door-e002")
LEVEL = 2


class GateRerunMismatch(InternalError, ValueError):
    """Re-run gate episodes that do not cover the recorded ones (an episode missing)."""


def changed_states(name: str = VALIDATION[TASK]) -> list[str]:
    """State ids of `name` whose version-2 layout differs from version 1."""
    return [a.state_id for a, b in zip(validation_states(name, 1), validation_states(name, 2))
            if a.layout != b.layout]


def rerun_items(version: int, name: str = VALIDATION[TASK]) -> list[tuple]:
    """(group, scene id, layout, draw) of the re-run episodes at `version`: every level-2 state
    on version 1, the changed ones on version 2; same scene ids and so the gates' noise."""
    changed = set(changed_states(name))
    states = [s for s in validation_states(name, version) if s.layout_level == LEVEL
              and (version == 1 or s.state_id in changed)]
    return [("draw 0" if draw == 0 else "draws 1-4", f"{s.state_id}-d{draw}", s.layout,
             sample_draw(s.state_id, draw)) for draw in range(N_DRAWS) for s in states]


def journal(out: Path, mechanism: str, experience_id: str, version: int) -> Path:
    return Path(out) / f"{mechanism}__{experience_id}.v{version}.jsonl"


def run_gate_episodes(out: Path, root=None, log=print) -> None:
    """Run every re-run episode not yet in its journal under `out` (one process, CPU)."""
    import torch


    torch.set_num_threads(1)
    Path(out).mkdir(parents=True, exist_ok=True)
    camera = None
    try:
        for mechanism in MECHANISMS:
            for experience_id in EXPERIENCES:
                actor, size = load_actor(str(policy_dir(mechanism, experience_id, root)))
                camera = camera or make_camera(DoorSim(), TASK, size)
                for version in (1, 2):
                    path = journal(out, mechanism, experience_id, version)
                    done = read_episodes(path, GATE_SEED)
                    for group, scene_id, layout, draw in rerun_items(version):
                        if scene_id in done:
                            continue
                        result = run_episode(camera.sim, camera, actor, lambda s, L=layout: s.restore(L),
                                             draw, noise_for(GATE_SEED, experience_id, scene_id,
                                                             HORIZON[TASK]), HORIZON[TASK])
                        row = {"scene_id": scene_id, "group": group, "seed": GATE_SEED,
                               "success": bool(result.success), "steps": result.steps}
                        done[scene_id] = row
                        with open(path, "a") as f:
                            f.write(json.dumps(row) + "\n")
                    log(f"{mechanism} {experience_id} v{version}: {len(done)} episodes")
    finally:
        if camera is not None:
            camera.close()


def _counts(episodes: dict, states) -> dict[str, list[int]]:
    counts = {"draw 0": [0, 0], "draws 1-4": [0, 0]}
    for scene_id, row in episodes.items():
        if scene_id.rsplit("-d", 1)[0] in states:
            counts[row["group"]][0] += int(row["success"])
            counts[row["group"]][1] += 1
    return counts


def gates_v2(record: dict, v1: dict, v2: dict, changed: list[str]) -> dict:
    """The version-2 gates of a policy's `record` (its training.json): the recorded counts with
    the `changed` states' version-1 episodes (`v1`) replaced by their version-2 ones (`v2`).
    The version-1 re-run's level-2 successes are recorded beside the recorded ones
    (`rerun_reproduces`: a policy episode reproduces only up to the renderer's rounding on
    another machine, so an episode may flip). Raises `GateRerunMismatch` when an episode is
    missing."""
    level_states = {s.state_id for s in validation_states(record["validation"]["query_set"], 1)
                    if s.layout_level == LEVEL}
    rerun = _counts(v1, level_states)
    recorded = record["validation"]["validation_levels"][f"level {LEVEL}"]
    rerun_level = [rerun["draw 0"][0] + rerun["draws 1-4"][0], rerun["draw 0"][1] + rerun["draws 1-4"][1]]
    if rerun_level[1] != recorded[1]:
        raise GateRerunMismatch(f"{record['mechanism']} {record['experience_id']}: version-1 level-2 "
                                f"re-run has {rerun_level[1]} episodes, training.json records {recorded[1]}")
    old, new = _counts(v1, set(changed)), _counts(v2, set(changed))
    if [new[g][1] for g in new] != [old[g][1] for g in old]:
        raise GateRerunMismatch(f"{record['experience_id']}: version-2 episodes incomplete")
    groups = {g: list(v) for g, v in record["validation"]["groups"].items()}
    levels = {k: list(v) for k, v in record["validation"]["validation_levels"].items()}
    for g in ("draw 0", "draws 1-4"):
        groups[g][0] += new[g][0] - old[g][0]
        levels[f"level {LEVEL}"][0] += new[g][0] - old[g][0]
    gates = judge_gates(record["mechanism"], groups)
    return {"query_set_version": 2, "changed_states": list(changed), "seed": GATE_SEED,
            "groups": groups, "validation_levels": levels,
            "level_2_version_1_rerun": rerun_level, "level_2_version_1_recorded": list(recorded),
            "rerun_reproduces": rerun_level == list(recorded), "gates": gates,
            "gates_passed": all(g["passed"] for g in gates.values())}


def record_gates_v2(out: Path, root=None) -> dict[str, dict]:
    """Write `gates_v2` into each Door policy's training.json under `root` from the journals
    under `out`; returns them by "<mechanism> <experience>"."""
    changed = changed_states()
    written = {}
    for mechanism in MECHANISMS:
        for experience_id in EXPERIENCES:
            path = policy_dir(mechanism, experience_id, root) / "training.json"
            record = json.loads(path.read_text())
            entry = gates_v2(record, read_episodes(journal(out, mechanism, experience_id, 1), GATE_SEED),
                             read_episodes(journal(out, mechanism, experience_id, 2), GATE_SEED), changed)
            record["gates_v2"] = entry
            path.write_text(json.dumps(record, indent=1, sort_keys=True) + "\n")
            written[f"{mechanism} {experience_id}"] = entry
    return written
