"""What mutation testing found unchecked in `adopt_staging`: a staged cell of a seed the
benchmark does not have counts for nothing, so it cannot stand in for a missing one."""

from __future__ import annotations

import json

from benchmark_data.generation.adopt_staging import staging_state
from benchmark_data.paths import cells_journal
from benchmark_data.query_sets import read_scenes
from benchmark_data.registry import N_SEEDS
from tests.support.staging import POLICY_SETTINGS, published_tree, staging_tree


def test_a_cell_of_a_seed_past_the_last_does_not_complete_a_setting(tmp_path):
    """Seeds are 0 .. N_SEEDS - 1. The last cell of a setting (its last experience and scene,
    seed N_SEEDS - 1) is left out and the same cell with seed N_SEEDS staged instead: the
    setting stays one cell short."""
    root = published_tree(tmp_path)
    staging = staging_tree(tmp_path, root, skip_cells=1)  # the last cell of each setting left out
    setting = POLICY_SETTINGS[-1]  # written last, so the journal's last line is its
    scenes = list(read_scenes(setting.query_set, root).scene_id)
    journal = cells_journal(setting.mechanism.value, setting.query_set, staging)
    last = json.loads(journal.read_text().splitlines()[-1])
    assert (last["experience_id"], last["state_id"], last["seed"]) == (
        setting.experience_ids[-1], scenes[-2], N_SEEDS - 1)
    with journal.open("a") as handle:
        handle.write(json.dumps({**last, "state_id": scenes[-1], "seed": N_SEEDS}) + "\n")
    total = setting.k * len(scenes) * N_SEEDS
    state = staging_state(staging, root)
    assert f"{setting.id}: {total - 1}/{total} cells" in state.settings_incomplete
    assert not state.ready
