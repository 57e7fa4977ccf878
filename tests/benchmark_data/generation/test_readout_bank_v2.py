"""Bank version 2 at small scale (the same code as the full run: one initialization per new
sealed split, three policy rollouts with a short horizon): version 1's public rows carried
unchanged, the policies' frames as natural rows with their source, new sealed splits under a
new key, and a bank the engine's reader accepts."""

from __future__ import annotations

import hashlib
import json

import numpy as np
import pandas as pd
import pytest

from benchmark_data.generation import readout_bank_v2 as v2
from benchmark_data.generation import readout_policy_frames as pf
from benchmark_data.readout_banks import bank_dir, read_bank, read_images, read_labels, read_observations
from leaderboard.readout import read_bank as engine_bank
from simulator.readout_inits import initializations

pytestmark = [pytest.mark.sim, pytest.mark.slow]

TASK = "stack"
HORIZON = 23


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    base = tmp_path_factory.mktemp("v2")
    root = base / "root"  # a frozen root: the published version 1 bank, version 2 made here
    (root / "readout").mkdir(parents=True)
    (root / "readout" / f"{TASK}-v1").symlink_to(bank_dir(TASK, None, "v1"))
    work, frames, out, sealed = base / "work", base / "frames", root / "readout" / f"{TASK}-v2", base / "sealed"
    assert v2.make_chunks(TASK, work=work, sealed=sealed, limit=1) == 2
    assert pf.run_frames(TASK, splits=("dev",), work=frames, limit=2, horizon=HORIZON, bank="v2") == 2
    assert pf.run_frames(TASK, splits=("confirm",), work=frames, limit=1, horizon=HORIZON, bank="v2") == 1
    bank = v2.assemble(TASK, work=work, frames_work=frames, out=out, sealed=sealed, limit=1)
    return {"bank": bank, "out": out, "sealed": sealed, "work": work, "root": root, "base": base}


def test_new_sealed_initializations_differ_from_every_version_1_one():
    for split in ("confirm", "eval"):
        old = initializations(TASK, split, "v1")
        new = initializations(TASK, split, "v2")
        assert len(new) == len(old) and not {i.init_id for i in old} & {i.init_id for i in new}
        assert not {json.dumps(i.layout.to_dict(), sort_keys=True) for i in old} \
            & {json.dumps(i.layout.to_dict(), sort_keys=True) for i in new}
    for split in ("train", "dev"):
        assert initializations(TASK, split, "v2") == initializations(TASK, split, "v1")


def test_version_1_public_rows_are_carried_unchanged(built):
    out = built["out"]
    old = read_labels(TASK).set_index("observation_id")
    new = pd.read_parquet(out / "labels.parquet").set_index("observation_id")
    assert set(old.index) <= set(new.index)
    pd.testing.assert_frame_equal(new.loc[old.index, old.columns], old, check_dtype=False)
    sample = [i for i in old.index if read_observations(TASK).set_index("observation_id").at[i, "shard"]][::400]
    obs = pd.read_parquet(out / "observations.parquet").set_index("observation_id")
    for oid in sample:
        with np.load(out / obs.at[oid, "shard"]) as z:
            got = z["agentview"][int(obs.at[oid, "row"])], z["wrist"][int(obs.at[oid, "row"])]
        want = read_images(TASK, [oid])
        assert np.array_equal(got[0], want["agentview"][0]) and np.array_equal(got[1], want["wrist"][0])


def test_policy_frames_are_natural_rows_named_by_their_source(built):
    labels = pd.read_parquet(built["out"] / "labels.parquet")
    policy = labels[(labels["kind"] == "natural") & (labels["source"] != "expert")]
    assert len(policy) and set(policy["split"]) == {"dev"}
    first = policy.iloc[0]
    slug = first["source"].replace("/", "-")
    assert first["observation_id"] == f"{first['initialization']}-{slug}-n{int(first['frame']):03d}"
    sources = built["bank"]["natural_sources"]
    assert sources["expert"]["code_version"] == "readout-bank/1"
    assert all(v["code_version"].startswith(pf.FRAMES_VERSION + "+") for k, v in sources.items() if k != "expert")
    assert built["bank"]["validation"]["policy_frames"]["dev"]["rollouts"] == 2


def test_sealed_splits_are_new_opaque_and_sealed(built):
    out, sealed = built["out"], built["sealed"]
    obs = pd.read_parquet(out / "observations.parquet")
    closed = obs[obs["split"].isin(["confirm", "eval"])]
    assert set(closed["initialization"]) == {"stack-confirm-i024", "stack-eval-i064"}
    assert not set(pd.read_parquet(out / "labels.parquet")["split"]) & {"confirm", "eval"}
    opaque = closed[~closed["observation_id"].str.contains("-x")]
    assert len(opaque) and all(oid.startswith(("stack-confirm-", "stack-eval-")) and "-i0" not in oid
                               for oid in opaque["observation_id"])
    named = closed[closed["observation_id"].str.contains("-x")]  # rejected cells, shared start frames
    assert (closed.loc[closed["shard"] == "", "observation_id"].isin(named["observation_id"])).all()
    for init, group in named.groupby("initialization"):
        assert sorted(group["observation_id"]) == [f"{init}-x{k:02d}" for k in range(len(group))]
    assert (sealed / "readout-id-key-v2").is_file() and not (sealed / "readout-id-key").exists()
    data = (sealed / "stack-v2-labels.parquet").read_bytes()
    assert hashlib.sha256(data).hexdigest() == built["bank"]["sealed_labels_sha256"]
    sealed_rows = pd.read_parquet(sealed / "stack-v2-labels.parquet")
    confirm_policy = sealed_rows[(sealed_rows["split"] == "confirm") & (sealed_rows["source"] != "expert")
                                 & (sealed_rows["kind"] == "natural")]
    assert len(confirm_policy) >= 2  # the confirm rollout's frames: first and final state at least
    assert set(sealed_rows["observation_id"]) == set(closed["observation_id"])
    assert not set(closed["observation_id"]) & set(read_observations(TASK)["observation_id"])


def test_the_engine_reads_the_assembled_bank_with_its_sealed_labels(built):
    bank = engine_bank(built["out"], sealed_labels=built["sealed"] / "stack-v2-labels.parquet")
    assert {"train", "dev", "confirm", "eval"} <= set(bank.labelled_splits())
    assert read_bank(TASK)["grid"] == json.loads((built["out"] / "bank.json").read_text())["grid"]


@pytest.mark.parametrize("task", ["door", "stack"])
def test_a_published_policy_rollouts_frames_render_again_as_stored(task):
    """Golden frames of the published version 2 bank: the shortest `dev` rollout of the first
    policy runs again and gives each stored frame's step, coordinate and pixels, and the start's
    state hash. Later states are compared through the coordinate to 1e-6 of its unit, not by
    hash: a run in another process can differ from the stored one in the last bits of a state
    (docs/readout.md, "Version 2's sealed labels")."""
    from benchmark_data.policy_files import policy_dirs
    from simulator.policy_executor import load_actor, make_camera
    from simulator.provenance import policy_code_version
    from simulator.readout_cells import Observer
    from simulator.readout_inits import initialization, make_sim
    from simulator.readout_protocol import renders_agree

    labels = read_labels(task, bank="v2")
    frames = labels[(labels["kind"] == "natural") & (labels["source"] != "expert") & (labels["split"] == "dev")]
    (mechanism, eid), directory = sorted(policy_dirs(task, None).items())[0]
    mine = frames[frames["source"] == f"{mechanism}/{eid}"]
    init_id = mine.groupby("initialization").size().idxmin()
    stored = mine[mine["initialization"] == init_id].sort_values("frame")
    init = initialization(task, "dev", int(init_id.rsplit("-i", 1)[1]))
    sim = make_sim(task)
    observer = Observer(sim, task)
    actor, size = load_actor(str(directory))
    camera = make_camera(sim, task, size)
    try:
        rollout = pf.rollout_frames(observer, camera, actor, init, f"{mechanism}/{eid}", eid,
                                    policy_code_version(directory))
    finally:
        camera.close()
        observer.close()
    assert rollout.rows["frame"].tolist() == stored["frame"].tolist()
    assert np.allclose(rollout.rows["coordinate"], stored["coordinate"], rtol=0, atol=1e-6)
    assert rollout.rows["state_hash"].iloc[0] == stored["state_hash"].iloc[0]
    images = read_images(task, stored["observation_id"].tolist(), bank="v2")
    for k in range(len(stored)):
        assert renders_agree(images["agentview"][k], rollout.agent[k])
        assert renders_agree(images["wrist"][k], rollout.wrist[k])


def test_sealed_rows_pixels_cannot_single_out_take_ids_from_the_physics():
    """Rejected cells (no image) and rows sharing both views with another row of their
    initialization (every source's first frame) are named by their place, not the key."""
    rows = pd.DataFrame({
        "observation_id": ["h1", "h2", "h3", "h4", "h5", "h6", "pub"],
        "initialization": ["s-confirm-i024"] * 5 + ["s-eval-i064", "s-dev-i000"],
        "split": ["confirm"] * 5 + ["eval", "dev"],
        "kind": ["controlled", "controlled", "natural", "natural", "controlled", "controlled", "natural"],
        "source": [None, None, "policy/b", "expert", None, None, "expert"],
        "frame": [None, None, 0, 0, None, None, 0],
        "context": [3, 0, None, None, 1, 2, None], "grid_index": [5, 5, None, None, 0, 0, None],
        "_image": [-1, -1, 0, 1, 2, -1, 3]})
    agent = np.zeros((4, 2, 2, 3), np.uint8)
    agent[2] += 9  # h5's own images; h3 and h4 show the same start
    wrist = np.zeros_like(agent)
    out = v2.pixel_blind_ids(rows, agent, wrist)
    assert out["observation_id"].tolist() == ["s-confirm-i024-x01", "s-confirm-i024-x00", "s-confirm-i024-x03",
                                              "s-confirm-i024-x02", "h5", "s-eval-i064-x00", "pub"]


def test_lost_sealed_labels_are_rebuilt_from_fresh_renders_and_checked_by_hash(built):
    """The sealed labels and the id key gone, `rebuild_sealed` renders the sealed splits and the
    confirm rollout again and installs the very file the assembly wrote (its sha256)."""
    lost = built["base"] / "sealed-elsewhere"
    result = v2.rebuild_sealed(TASK, root=built["root"], work=built["base"] / "rebuild", sealed=lost,
                               limit=1, rollouts=1, horizon=HORIZON)
    assert result["already"] is False
    rebuilt = (lost / f"{TASK}-v2-labels.parquet").read_bytes()
    assert rebuilt == (built["sealed"] / f"{TASK}-v2-labels.parquet").read_bytes()
    assert not (lost / "readout-id-key-v2").exists()  # the original key is not needed, nor made
