"""The recipe trial (simulator.policy_recipe, simulator.wrist_camera, simulator.recipe_demos): two real cameras,
layouts over levels 0-2 from their own seeds, frozen encoders, cloning on cached features."""

from dataclasses import replace

import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("robomimic")

from benchmark_data.generation.query_set_build import (  # noqa: E402
    check_not_a_query_state, check_validation_disjoint,
)
from simulator.appearance import sample_draw  # noqa: E402
from simulator.policy_model import ACTION_DIM, SEQUENCE_LENGTH, Demo  # noqa: E402
from simulator.policy_recipe import (  # noqa: E402
    CAMERAS, FEATURE_KEYS, FeatureDemos, RecipeActor, RecipePolicy, RecipeSpec, centre_crop, feature_demos,
    pretrain_targets, random_crops, sample_sequences, train_recipe,
)
from simulator.recipe_demos import recipe_plans  # noqa: E402
from simulator.stack_scenes import query_states  # noqa: E402
from simulator.wrist_camera import DualCamera, split  # noqa: E402
from tests.support.paths import REPO_ROOT

TINY = RecipeSpec(image_size=32, feature_dim=8, keypoints=4, hidden_dim=16, pretrain_steps=3, pretrain_batch=4,
                  train_steps=4, batch_size=3)


@pytest.fixture(scope="module")
def stack_sim():
    from simulator.stack_sim import StackSim

    return StackSim()


def test_the_dual_camera_shows_the_agent_view_left_and_the_hand_camera_right(stack_sim):
    from simulator.policy_camera import PolicyCamera

    state = query_states("stack-orig")[4]
    dual = DualCamera(stack_sim)
    try:
        dual.set_draw(sample_draw(state.state_id, 0))
        stack_sim.restore(state.layout)
        nominal = dual.render()
        agent, wrist = split(nominal)
        assert nominal.shape == (64, 128, 3) and nominal.dtype == np.uint8
        assert not np.array_equal(agent, wrist)
        dual.set_draw(sample_draw(state.state_id, 2))
        tinted_agent, tinted_wrist = split(dual.render())
        assert not np.array_equal(tinted_wrist, wrist)  # lights, tints and textures reach the hand camera
        dual.set_draw(sample_draw(state.state_id, 0))
        assert np.array_equal(dual.render(), nominal)  # back to nominal exactly
    finally:
        dual.close()
    single = PolicyCamera(stack_sim)
    try:
        single.set_draw(sample_draw(state.state_id, 0))
        assert np.array_equal(single.render(), agent)  # the left half is the published policies' view
    finally:
        single.close()


def test_split_refuses_frames_that_are_not_side_by_side():
    with pytest.raises(ValueError, match=r"expected side-by-side frames \(H, 2H, 3\), got shape \(4, 64, 64, 3\)"):
        split(np.zeros((4, 64, 64, 3), np.uint8))


def test_recipe_plans_cycle_levels_0_to_2_from_their_own_seeds():
    plans = recipe_plans("stack", "stack-e000", 30, randomized=False)
    assert plans == recipe_plans("stack", "stack-e000", 30, randomized=False)
    assert plans != recipe_plans("stack", "stack-e001", 30, randomized=False)
    assert {p.draw for p in plans} == {0}
    assert [p.draw for p in recipe_plans("door", "door-e001", 7, randomized=True)] == [0, 1, 2, 3, 4, 0, 1]
    layouts = [p.layout for p in plans]
    assert [abs(L.cube_a[2]) <= 0.1 for L in layouts[0::3]] == [True] * 10  # level 0: nominal yaw spread
    spread = max(abs(L.cube_a[0]) for L in layouts)
    assert spread > 0.06  # wider than the published demonstrations' base-scene neighbourhood
    check_not_a_query_state("stack", layouts)
    check_validation_disjoint("stack-val", layouts, [p.draw_key for p in plans])
    with pytest.raises(ValueError, match="task must be 'stack' or 'door', got 'lift'"):
        recipe_plans("lift", "lift-e000", 1, randomized=False)


def test_the_hand_camera_encoder_learns_positions_relative_to_the_hand():
    state = np.array([[0.1, 0.2, 0.8, 0.3, 0.4, 0.85], [0.0, 0.0, 0.8, 0.1, 0.1, 0.85]])
    eef = np.array([[0.1, 0.1, 1.0], [0.0, -0.1, 0.9]])
    assert np.array_equal(pretrain_targets("stack", "agentview", state, eef), state)
    np.testing.assert_allclose(pretrain_targets("stack", "eye_in_hand", state, eef),
                               [[0.0, 0.1, -0.2, 0.2, 0.3, -0.15], [0.0, 0.1, -0.1, 0.1, 0.2, -0.05]])
    door = np.array([[0.5, 0.5, 1.0, 0.1, 0.2]])
    np.testing.assert_allclose(pretrain_targets("door", "eye_in_hand", door, np.array([[0.4, 0.5, 0.9]])),
                               [[0.1, 0.0, 0.1, 0.1, 0.2]])


def test_sequences_stay_inside_one_demonstration_and_pad_with_its_last_frame():
    data = FeatureDemos(obs={"x": np.arange(15, dtype=np.float32)[:, None]}, actions=np.zeros((15, 7), np.float32),
                        starts=np.array([0, 12]), ends=np.array([12, 15]))
    batch = sample_sequences(data, np.random.default_rng(0), 200)
    x = batch["obs"]["x"][..., 0]
    assert x.shape == (200, SEQUENCE_LENGTH)
    for row in x:
        demo_end = 12 if row[0] < 12 else 15
        assert np.all(np.diff(row) >= 0) and row.max() == min(row[0] + SEQUENCE_LENGTH - 1, demo_end - 1)


def _demos(size=32, lengths=(14, 9)):
    rng = np.random.default_rng(7)
    return [Demo(images=rng.integers(0, 256, (n, size, 2 * size, 3), dtype=np.uint8),
                 eef_pos=rng.normal(0.0, 0.1, (n, 3)), gripper_qpos=rng.uniform(-0.04, 0.04, (n, 2)),
                 actions=rng.uniform(-1.0, 1.0, (n, ACTION_DIM)), object_state=rng.normal(size=(n, 6)))
            for n in lengths]


def test_a_trained_recipe_policy_keeps_its_pretrained_encoders_and_round_trips(tmp_path):
    import torch

    threads = torch.get_num_threads()
    try:
        demos = _demos()
        policy, curves = train_recipe("stack", demos, TINY)
    finally:
        torch.set_num_threads(threads)
    assert [s for s, _ in curves["cloning"]] == [TINY.train_steps] and np.isfinite(curves["cloning"][0][1])
    assert set(curves) == {*CAMERAS, "cloning"}
    for core in policy.encoders.values():
        assert not any(p.requires_grad for p in core.parameters())  # frozen before features were cached
    policy.save(tmp_path / "p")
    again = RecipePolicy.load(tmp_path / "p")
    assert again.spec == TINY
    frames = demos[0]
    actions = []
    for p in (policy, again):
        actor = RecipeActor(p)
        actor.reset()
        actions.append(np.concatenate([actor.act(frames.images[t:t + 1], frames.eef_pos[t:t + 1],
                                                 frames.gripper_qpos[t:t + 1]) for t in range(5)]))
    assert actions[0].shape == (5, ACTION_DIM) and np.isfinite(actions[0]).all()
    np.testing.assert_array_equal(actions[0], actions[1])
    changed = replace(TINY, seed=1)
    assert RecipeSpec.from_json(changed.to_json()) == changed


def _summary_module():
    import importlib.util
    from pathlib import Path

    path = REPO_ROOT / "scripts" / "policy_recipe_summary.py"
    spec = importlib.util.spec_from_file_location("policy_recipe_summary", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_trial_summary_applies_the_pre_registered_gates():
    gates = _summary_module().gates
    policy = {"mechanism": "policy", "groups": {"own": [16, 20], "draw 0": [20, 40], "draws 1-4": [31, 160]}}
    assert gates(policy) == {"own >= 0.8 (n >= 20)": True, "draw 0 >= 0.5": True, "draws 1-4 >= 0.2": False}
    few = {"mechanism": "policy", "groups": {"own": [10, 10]}}
    assert gates(few) == {"own >= 0.8 (n >= 20)": False, "draw 0 >= 0.5": None, "draws 1-4 >= 0.2": None}
    dr = {"mechanism": "policy_dr", "groups": {"own": [19, 20], "draw 0": [20, 40], "draws 1-4": [63, 160]}}
    assert gates(dr) == {"own >= 0.8 (n >= 20)": True, "draws 1-4 within 0.1 of draw 0": False}
    dr["groups"]["draws 1-4"] = [65, 160]
    assert gates(dr)["draws 1-4 within 0.1 of draw 0"] is True


def test_the_published_trial_command_names_no_scratch_folder():
    public = _summary_module().public_command
    assert public("scripts/policy_recipe_trial.py stack-e000 --workdir /tmp/x/y --demos 240") == \
        "scripts/policy_recipe_trial.py stack-e000 --workdir WORKDIR --demos 240"


def _trial_dir(path, experience, mechanism, successes):
    import json

    path.mkdir()
    (path / "recipe.summary.json").write_text(json.dumps({"experience_id": experience, "mechanism": mechanism}))
    rows = [{"scene_id": "train:x:0", "group": "own", "success": True}]
    rows += [{"scene_id": f"stack-val-s{i:02d}-d0", "group": "draw 0", "success": bool(ok)}
             for i, ok in enumerate(successes)]
    (path / "recipe.episodes.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_trials_of_one_mechanism_are_summarised_as_one_validation_setting(tmp_path):
    module = _summary_module()
    a = _trial_dir(tmp_path / "a", "stack-e000", "policy", [1, 1, 0, 0])
    b = _trial_dir(tmp_path / "b", "stack-e001", "policy", [0, 1, 1, 0])
    figures = module.validation_setting([a, b])
    assert figures["scenes"] == 4 and figures["experiences"] == ["stack-e000", "stack-e001"]
    assert figures["random"] == 0.5 and figures["oracle"] == 0.75 and figures["best_fixed_success"] == 0.5
    assert figures["go_no_go_random_at_least_0.2"] is True
    c = _trial_dir(tmp_path / "c", "stack-e000", "policy_dr", [1, 1, 1, 1])
    with pytest.raises(SystemExit, match=r"one mechanism; these trials have \['policy', 'policy_dr'\]"):
        module.validation_setting([a, c])


def test_random_crops_are_windows_of_their_frame_and_the_centre_crop_is_the_middle():
    frames = np.arange(2 * 8 * 8 * 3, dtype=np.int64).reshape(2, 8, 8, 3)
    crops = random_crops(frames, 5, np.random.default_rng(3))
    assert crops.shape == (2, 5, 5, 3)
    for frame, crop in zip(frames, crops):
        top, left = np.argwhere(frame[..., 0] == crop[0, 0, 0])[0]
        assert np.array_equal(frame[top:top + 5, left:left + 5], crop)
    assert np.array_equal(centre_crop(frames, 4), frames[:, 2:6, 2:6])
    offsets = {tuple(np.argwhere(frames[0, ..., 0] == c[0, 0, 0])[0])
               for c in random_crops(np.repeat(frames[:1], 200, axis=0), 5, np.random.default_rng(4))}
    assert offsets == {(r, c) for r in range(4) for c in range(4)}  # every window can be drawn


def test_cached_crops_give_one_crop_per_frame_of_a_sequence():
    n, crops = 12, 3
    values = np.arange(n * crops, dtype=np.float32).reshape(n, crops, 1)  # value = 3 * frame + crop
    data = FeatureDemos(obs={"x": values}, actions=np.zeros((n, 7), np.float32), starts=np.array([0]),
                        ends=np.array([n]))
    x = sample_sequences(data, np.random.default_rng(0), 300)["obs"]["x"][..., 0]
    assert x.shape == (300, SEQUENCE_LENGTH)
    frame, crop = np.divmod(x.astype(int), crops)
    assert np.all(np.diff(frame, axis=1) >= 0)  # still consecutive frames of one demonstration
    assert set(np.unique(crop)) == {0, 1, 2}  # each frame's crop drawn independently


def test_a_cropped_recipe_caches_several_agent_view_crops_and_acts_on_the_centre():
    import torch

    spec = replace(TINY, crop_size=28, crops_per_frame=2)
    threads = torch.get_num_threads()
    try:
        demos = _demos()
        policy, _ = train_recipe("stack", demos, spec)
    finally:
        torch.set_num_threads(threads)
    data = feature_demos(demos, policy.encoders, spec)
    assert data.obs[FEATURE_KEYS["agentview"]].shape == (23, 2, spec.feature_dim)
    assert data.obs[FEATURE_KEYS["eye_in_hand"]].shape == (23, spec.feature_dim)
    assert not np.array_equal(data.obs[FEATURE_KEYS["agentview"]][:, 0], data.obs[FEATURE_KEYS["agentview"]][:, 1])
    actor = RecipeActor(policy)
    actor.reset()
    frames = demos[0]
    action = actor.act(frames.images[:1], frames.eef_pos[:1], frames.gripper_qpos[:1])
    assert action.shape == (1, ACTION_DIM) and np.isfinite(action).all()


def test_recipe_training_repeats_to_the_bit_for_the_same_spec_and_demonstrations(tmp_path):
    """One intra-op thread, one spec, the same demonstrations: the same weights and curves (what
    `expaudit data train-policies` relies on to rebuild a version-2 policy on one machine)."""
    import torch

    threads = torch.get_num_threads()
    spec = replace(TINY, crop_size=28, crops_per_frame=2)  # the random crops drawn as well
    weights, curves = [], []
    try:
        for run in range(2):
            policy, curve = train_recipe("stack", _demos(), spec)
            policy.save(tmp_path / f"run{run}")
            weights.append(torch.load(tmp_path / f"run{run}" / "weights.pt", weights_only=True))
            curves.append(curve)
    finally:
        torch.set_num_threads(threads)
    assert curves[0] == curves[1]
    assert weights[0].keys() == weights[1].keys()
    for key in weights[0]:
        assert torch.equal(weights[0][key], weights[1][key]), key
    other, _ = train_recipe("stack", _demos(), replace(spec, seed=1))
    torch.set_num_threads(threads)
    other.save(tmp_path / "seed1")
    changed = torch.load(tmp_path / "seed1" / "weights.pt", weights_only=True)
    assert any(not torch.equal(weights[0][k], changed[k]) for k in weights[0])  # the check can see a change
