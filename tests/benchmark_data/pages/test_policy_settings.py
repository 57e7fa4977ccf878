"""Figures of the image-policy settings over complete seeds (pure functions, hand-built arrays)."""

import json
import shutil

import numpy as np
import pandas as pd
import pytest

from benchmark_data.cells import CELL_COLUMNS
from benchmark_data.pages.appearance_failures import appearance_failure_share, complete_seeds
from benchmark_data.pages.policy_settings import success_by_group, summarize_policy, write_doc
from benchmark_data.paths import FROZEN_ROOT, cells_table, library_dir, query_set_dir
from benchmark_data.policy_files import policy_dir
from benchmark_data.registry import LIBRARY_IDS, QUERY_SETS
from expaudit.errors import InvalidInput
from leaderboard.matrix import MISSING
from leaderboard.metrics.bootstrap import percentile_interval, resample_counts
from leaderboard.metrics.discrimination import discriminates, shortfall

M = MISSING

# Two physical states a and b, each with draws 0, 1, 2 (scene order: a0 a1 a2 b0 b1 b2).
STATES = np.array(["a", "a", "a", "b", "b", "b"])
DRAWS = np.array([0, 1, 2, 0, 1, 2])


def _tensor(*seeds):
    """K x Q x S from per-seed K x Q lists."""
    return np.stack([np.array(s, dtype=np.int8) for s in seeds], axis=2)


def test_complete_seeds_skips_a_seed_with_one_missing_cell():
    full = [[1, 0, 1], [0, 0, 1]]
    one_missing = [[1, M, 1], [0, 0, 1]]
    untouched = [[M, M, M], [M, M, M]]
    y = _tensor(full, one_missing, full, untouched)
    assert complete_seeds(y) == (0, 2)
    assert complete_seeds(_tensor(untouched, untouched)) == ()
    with pytest.raises(InvalidInput, match=r"outcomes must be a \(K, Q, S\) tensor"):
        complete_seeds(np.zeros((2, 3)))


def test_appearance_share_counts_draw0_twins_per_experience_and_seed():
    #          a0 a1 a2 b0 b1 b2
    s0 = [[1, 0, 0, 0, 0, 1],   # e0: a1, a2 fail with a0 ok -> 2 caused; b1 fails, b0 failed -> not
          [0, 0, 1, 1, 1, 0]]   # e1: a1 fails, a0 failed -> not; b2 fails, b0 ok -> caused
    s1 = [[0, 0, 1, 1, 1, 1],   # e0: a1 fails, a0 failed (this seed) -> not
          [1, 1, 1, 1, 0, 0]]   # e1: b1, b2 fail, b0 ok -> 2 caused
    y = _tensor(s0, s1)
    only0 = appearance_failure_share(y, STATES, DRAWS, seeds=[0])
    assert (only0.failures, only0.appearance_caused) == (5, 3)
    assert only0.share == pytest.approx(3 / 5) and only0.seeds == (0,)
    only1 = appearance_failure_share(y, STATES, DRAWS, seeds=[1])
    assert (only1.failures, only1.appearance_caused) == (3, 2)
    both = appearance_failure_share(y, STATES, DRAWS, seeds=(0, 1))
    assert (both.failures, both.appearance_caused) == (8, 5)
    assert both.share == pytest.approx(5 / 8)


def test_twin_is_the_same_seed_not_another_one():
    # e0 fails a1 under seed 0 while a0 fails under seed 0 and succeeds under seed 1.
    y = _tensor([[0, 0, 1, 1, 1, 1]], [[1, 1, 1, 1, 1, 1]])
    share = appearance_failure_share(y, STATES, DRAWS, seeds=[0, 1])
    assert (share.failures, share.appearance_caused) == (1, 0) and share.share == 0.0


def test_failures_on_draw_0_are_not_counted_and_scene_order_does_not_matter():
    y = _tensor([[0, 1, 1, 0, 0, 1]])  # failures on a0, b0 (draw 0) and b1 (twin b0 failed)
    share = appearance_failure_share(y, STATES, DRAWS, seeds=[0])
    assert (share.failures, share.appearance_caused) == (1, 0)
    perm = np.array([4, 0, 5, 2, 3, 1])  # shuffle scenes: twins are found by state, not position
    y2 = _tensor([[1, 0, 1, 1, 1, 0]])[:, perm, :]  # a1 and b2 fail, twins a0, b0 succeed
    share2 = appearance_failure_share(y2, STATES[perm], DRAWS[perm], seeds=[0])
    assert (share2.failures, share2.appearance_caused) == (2, 2) and share2.share == 1.0


def test_zero_failures_gives_no_share():
    y = _tensor([[1] * 6, [1] * 6])
    share = appearance_failure_share(y, STATES, DRAWS, seeds=[0])
    assert (share.failures, share.appearance_caused, share.share) == (0, 0, None)
    none = appearance_failure_share(y, STATES, DRAWS, seeds=[])
    assert none.share is None and none.seeds == ()


def test_appearance_share_rejects_missing_cells_and_bad_scene_tables():
    y = _tensor([[1, 0, 1, 1, 1, 1]], [[1, M, 1, 1, 1, 1]])
    assert appearance_failure_share(y, STATES, DRAWS, seeds=[0]).failures == 1
    with pytest.raises(InvalidInput, match="seed 1 has MISSING cells"):
        appearance_failure_share(y, STATES, DRAWS, seeds=[0, 1])
    with pytest.raises(InvalidInput, match="seeds: 2 is not in 0-1"):
        appearance_failure_share(y, STATES, DRAWS, seeds=[2])
    with pytest.raises(InvalidInput, match="state 'b' has no draw-0 scene"):
        appearance_failure_share(y, STATES, np.array([0, 1, 2, 3, 1, 2]), seeds=[0])
    with pytest.raises(InvalidInput, match="state 'a' has more than one draw-0 scene"):
        appearance_failure_share(y, STATES, np.array([0, 0, 2, 0, 1, 2]), seeds=[0])
    with pytest.raises(InvalidInput, match=r"must have shape \(6,\)"):
        appearance_failure_share(y, STATES[:5], DRAWS[:5], seeds=[0])


def test_setting_summary_uses_the_mean_over_complete_seeds_only():
    s0 = [[1, 0, 1, 0], [0, 1, 1, 0], [0, 0, 1, 1]]
    s1 = [[1, 1, 1, 0], [0, 1, 0, 0], [0, 0, 1, 1]]
    s2 = [[0, 0, 0, 0], [M, 0, 0, 0], [0, 0, 0, 0]]  # one missing cell: seed 2 not used
    s3 = [[M] * 4] * 3
    y = _tensor(s0, s1, s2, s3)
    s = summarize_policy(y)
    assert s.seeds_complete == (0, 1) and s.n_seeds == 4
    assert (s.cells_done, s.cells_total) == (35, 48)
    # seed-mean matrix: e0 [1, .5, 1, 0], e1 [0, 1, .5, 0], e2 [0, 0, 1, 1]
    assert s.random == pytest.approx(6 / 12)
    assert s.oracle == pytest.approx((1 + 1 + 1 + 1) / 4)
    assert s.best_fixed == 0 and s.best_fixed_success == pytest.approx(2.5 / 4)
    assert s.headroom == pytest.approx(1 - 2.5 / 4)
    assert s.best_fixed_advantage == pytest.approx((2.5 / 4 - 0.5) / (1 - 0.5))
    assert s.paper_bar is True
    assert s.quality_range == pytest.approx(2.5 / 4 - 1.5 / 4)  # e000 0.625, e001 0.375, e002 0.5


def test_setting_summary_without_a_complete_seed_has_no_figures():
    y = _tensor([[1, M], [0, 1]], [[M, M], [M, M]])
    s = summarize_policy(y)
    assert s.seeds_complete == () and (s.cells_done, s.cells_total) == (3, 8)
    assert s.random is None and s.oracle is None and s.best_fixed is None
    assert s.headroom is None and s.paper_bar is None and s.quality_range is None


def test_discrimination_bar():
    assert discriminates(random=0.50, oracle=0.60)  # gap exactly 0.10
    assert not discriminates(random=0.50, oracle=0.59)
    assert discriminates(random=0.30, oracle=0.90) and discriminates(random=0.85, oracle=0.95)
    assert not discriminates(random=0.29, oracle=0.90)
    assert not discriminates(random=0.86, oracle=1.00)
    # an all-success matrix: random 1.0, no gap
    assert summarize_policy(np.ones((3, 4, 1), dtype=np.int8)).paper_bar is False


def test_the_shortfall_names_each_part_of_the_bar_that_misses_with_its_numbers():
    assert shortfall(random=0.50, oracle=0.60) is None
    assert shortfall(random=0.18, oracle=0.30) == "random success 0.180 is below 0.30"
    assert shortfall(random=0.90, oracle=0.95) == ("oracle - random = 0.950 - 0.900 = 0.050 is below 0.10; "
                                                   "random success 0.900 is above 0.85")
    assert shortfall(random=0.02, oracle=0.05) == ("oracle - random = 0.050 - 0.020 = 0.030 is below 0.10; "
                                                   "random success 0.020 is below 0.30")


def test_docs_tables_from_a_frozen_root_with_one_complete_seed(tmp_path):
    """The real loaders on a root holding seed 0 of stack-policy-k3-orig and part of seed 1."""
    scenes = _root_with_scenes(tmp_path)
    rows = []
    for seed, n_scenes in ((0, len(scenes)), (1, 100)):
        for e in range(3):
            for scene in scenes.head(n_scenes).itertuples():
                # every nominal render succeeds; experience e fails exactly on draw e + 1
                success = int(scene.appearance_draw != e + 1)
                rows.append(("policy", "stack-orig", f"stack-e{e:03d}", scene.scene_id, seed, success,
                             "", "", 0.0, "test", "{}"))
    path = cells_table("policy", "stack-orig", tmp_path)
    path.parent.mkdir(parents=True)
    pd.DataFrame(rows, columns=list(CELL_COLUMNS)).to_parquet(path, index=False)

    # one stack Policy+DR policy of the root failed its draw-gap gate; the others record none
    gated = policy_dir("policy_dr", "stack-e001", tmp_path)
    gated.mkdir(parents=True)
    (gated / "weights.pt").write_bytes(b"")
    (gated / "spec.json").write_text(json.dumps({"policy_mechanism": 2, "train_steps": 20000}))
    (gated / "training.json").write_text(json.dumps({
        "gates": {"draw gap": {"value": 0.125, "n": 200, "at_most": 0.1, "min_n": 200, "passed": False},
                  "own": {"value": 0.9, "n": 20, "at_least": 0.8, "min_n": 20, "passed": True}},
        "validation": {"groups": {"own": [18, 20], "draw 0": [36, 40], "draws 1-4": [124, 160]}},
        "n_demos": 240, "train_wall_s": 1560}))

    text = write_doc(tmp_path / "policy_settings.md", tmp_path).read_text()
    assert ("| discriminates | paper's bar | failed policy gates | paper: random, oracle, A, headroom |"
            in text)
    # 600 cells of seed 0 + 300 of seed 1; random = 1 - 120/600, every scene has a success
    assert ("| stack-policy-k3-orig | 3 | 1 of 5 | 900/3000 | 0.80 | 1.00 | stack-e000 | 0.80 "
            "| 0.00 | 0.200 | 0.00 (below 0.10) | not known: fewer than 2 complete seeds | met | none "
            "| not given |") in text
    assert ("| stack-policydr-k3-orig | 3 | 0 of 5 | 0/3000 | no complete seed yet | | | | | | | | "
            "| stack-e001 Policy+DR: draw gap 0.12 (n 200), above its gate 0.10 | not given |") in text
    # 40 states x 3 experiences failures on draws 1-3, all with a succeeding draw-0 twin
    # one seed: no noise floor (it compares seeds)
    assert ("| stack | stack-orig | 100% [100, 100] (120/120, 1 seed) "
            "| n/a (fewer than two seeds) | no complete seed yet | n/a | n/a "
            "| 26% -> 2% |") in text
    assert ("| door | door-orig | no complete seed yet | n/a | no complete seed yet | n/a | n/a "
            "| not given") in text
    # the policies: the gated one with its validation episodes, the others not trained here
    assert ("| stack | Policy+DR | stack-e001 | 2 | 240 | 20,000 | 26 | 18/20 = 0.90 | 36/40 = 0.90 "
            "| 124/160 = 0.78 | failed: draw gap |") in text
    assert "| stack | Policy | stack-e000 | not trained | | | | | | | |" in text


def test_success_by_group_averages_experiences_seeds_and_scenes_of_each_group():
    outcomes = np.zeros((2, 4, 2), dtype=np.int8)
    outcomes[0, 0, :] = 1          # group 0: scene 0 succeeds for experience 0 on both seeds
    outcomes[1, 2, 0] = 1          # group 1: scene 2, experience 1, seed 0 only
    groups = np.array([0, 0, 1, 1])
    assert success_by_group(outcomes, groups, (0, 1)) == {0: 2 / 8, 1: 1 / 8}
    assert success_by_group(outcomes, groups, (0,)) == {0: 1 / 4, 1: 1 / 4}
    assert success_by_group(outcomes, groups, ()) == {}
    outcomes[0, 3, 1] = -1
    with pytest.raises(InvalidInput, match="MISSING"):
        success_by_group(outcomes, groups, (1,))
    with pytest.raises(InvalidInput, match="groups"):
        success_by_group(outcomes, groups[:3], (0,))


def _root_with_scenes(tmp_path):
    for library_id in LIBRARY_IDS.values():
        library_dir(library_id, tmp_path).mkdir(parents=True)
        shutil.copy(library_dir(library_id) / "experiences.parquet", library_dir(library_id, tmp_path))
    for query_set in QUERY_SETS:
        query_set_dir(query_set, tmp_path).mkdir(parents=True)
        shutil.copy(query_set_dir(query_set) / "scenes.parquet", query_set_dir(query_set, tmp_path))
    return pd.read_parquet(FROZEN_ROOT / "query_sets" / "stack-orig" / "scenes.parquet")


def _write_cells(root, mechanism, scenes, seeds, rng):
    rows = [(mechanism, "stack-orig", f"stack-e{e:03d}", scene.scene_id, seed, int(rng.random() < 0.6),
             "", "", 0.0, "test", "{}")
            for seed in seeds for e in range(3) for scene in scenes.itertuples()]
    path = cells_table(mechanism, "stack-orig", root)
    path.parent.mkdir(parents=True, exist_ok=True)
    pd.DataFrame(rows, columns=list(CELL_COLUMNS)).to_parquet(path, index=False)


@pytest.mark.parametrize("policy_seeds, dr_seeds, row_seeds", [
    ((0, 1), (0, 1, 2), {"policy": (0, 1), "policy_dr": (0, 1)}),   # shared seeds: those, for both
    ((0, 1), (2, 3), {"policy": (0, 1), "policy_dr": (2, 3)}),      # none shared: each its own
])
def test_the_appearance_row_uses_the_shared_seeds_and_shows_floor_and_excess(tmp_path, policy_seeds,
                                                                           dr_seeds, row_seeds):
    from benchmark_data.frozen import load_transfer
    from benchmark_data.pages.appearance_failures import (appearance_failure_share, excess_over_noise_floor,
                                                          noise_floor_share)
    from benchmark_data.pages.policy_settings import _floor_pct, _pct, appearance_table

    scenes = _root_with_scenes(tmp_path)
    rng = np.random.default_rng(4)
    _write_cells(tmp_path, "policy", scenes, policy_seeds, rng)
    _write_cells(tmp_path, "policy_dr", scenes, dr_seeds, rng)
    row = next(line for line in appearance_table(tmp_path).splitlines() if line.startswith("| stack | stack-orig"))
    for setting_id, mechanism in (("stack-policy-k3-orig", "policy"), ("stack-policydr-k3-orig", "policy_dr")):
        data = load_transfer(setting_id, tmp_path)
        args = (data.outcomes, data.scenes.state_ids, data.scenes.appearance_draw, row_seeds[mechanism])
        share, floor = appearance_failure_share(*args), noise_floor_share(*args)
        assert floor.share is not None and floor.interval.low < floor.share < floor.interval.high
        assert f"| {_pct(share)} | {_floor_pct(floor, excess_over_noise_floor(*args))} |" in row
        assert "; excess " in _floor_pct(floor, excess_over_noise_floor(*args))
    shared = set(policy_seeds) & set(dr_seeds)
    assert ("| n/a | 26% -> 2% |" in row) == (not shared)


def test_the_excess_over_the_floor_is_the_paired_difference_of_the_two_shares():
    from benchmark_data.pages.appearance_failures import (appearance_failure_share, excess_over_noise_floor,
                                                          noise_floor_share)

    rng = np.random.default_rng(9)
    states = np.repeat([f"s{i:02d}" for i in range(12)], 5)
    draws = np.tile(np.arange(5), 12)
    y = (rng.random((3, 60, 3)) < 0.55).astype(np.int8)
    excess = excess_over_noise_floor(y, states, draws, seeds=(0, 1, 2), n_bootstrap=300, seed=2)
    share = appearance_failure_share(y, states, draws, seeds=(0, 1, 2), n_bootstrap=300, seed=2)
    floor = noise_floor_share(y, states, draws, seeds=(0, 1, 2), n_bootstrap=300, seed=2)
    assert excess.difference == pytest.approx(share.share - floor.share)
    # paired: a loop computes both shares on each drawn multiset of states
    names = sorted(set(states))
    values = []
    for w in resample_counts(len(names), 300, np.random.default_rng(2)):
        f = c = pairs = wins = 0
        for name, count in zip(names, w):
            scenes = np.flatnonzero(states == name)
            nominal = scenes[draws[scenes] == 0][0]
            for q in scenes[draws[scenes] >= 1]:
                fail = y[:, q, :] == 0
                f += count * fail.sum()
                c += count * (fail & (y[:, nominal, :] == 1)).sum()
            for i in range(3):
                for s in range(3):
                    for other in range(3):
                        if other != s and y[i, nominal, s] == 0:
                            pairs += count
                            wins += count * (y[i, nominal, other] == 1)
        values.append(c / f - wins / pairs)
    want = percentile_interval(np.array(values), "excess")
    assert excess.interval.low == pytest.approx(want.low) and excess.interval.high == pytest.approx(want.high)
    assert excess_over_noise_floor(y, states, draws, seeds=(0,)).difference is None


def test_the_policies_table_refuses_a_retired_policy_and_names_a_malformed_record(tmp_path):
    from benchmark_data.pages.policies_table import policies_table

    old = policy_dir("policy", "stack-e000", tmp_path)
    old.mkdir(parents=True)
    (old / "weights.pt").write_bytes(b"")
    (old / "spec.json").write_text(json.dumps({"train_steps": 6000}))  # version 1 named no version
    (old / "training.json").write_text(json.dumps({"n_demos": 80, "train_wall_s": 300.9}))
    with pytest.raises(InvalidInput, match="spec.json: policy_mechanism 1 was retired"):
        policies_table(tmp_path)

    (old / "spec.json").write_text(json.dumps({"policy_mechanism": 2, "train_steps": 20000}))
    for record, message in [
            ({"gates": {}}, "a version-2 policy lacks field 'validation'"),
            ({"validation": {"groups": {"own": [20, 20]}}}, r"validation.groups .* 'draw 0'"),
            ({"validation": {"groups": {g: [1, 2] for g in ("own", "draw 0", "draws 1-4")}}},
             "field 'gates' must name at least one gate"),
            ({"validation": {"groups": {g: [1, 2] for g in ("own", "draw 0", "draws 1-4")}},
              "gates": {"own": {"value": 0.5}}}, "gate 'own' lacks a true/false field 'passed'")]:
        (old / "training.json").write_text(json.dumps(record))
        with pytest.raises(InvalidInput, match="training.json: " + message):
            policies_table(tmp_path)


def test_a_setting_row_says_what_misses_the_bar_and_a_narrow_quality_range():
    from benchmark_data.pages.policy_settings import _paper_bar_txt, _quality_txt

    always = summarize_policy(np.ones((2, 4, 1), dtype=np.int8))
    assert _paper_bar_txt(always) == ("missed: oracle - random = 1.000 - 1.000 = 0.000 is below 0.10; "
                                      "random success 1.000 is above 0.85")
    half = np.zeros((2, 4, 1), dtype=np.int8)
    half[0, :2, 0] = half[1, 2:, 0] = 1          # each experience wins half of the scenes
    assert _paper_bar_txt(summarize_policy(half)) == "met"
    assert _quality_txt(0.12) == "0.12" and _quality_txt(0.1) == "0.10"
    assert _quality_txt(0.04) == "0.04 (below 0.10)"
