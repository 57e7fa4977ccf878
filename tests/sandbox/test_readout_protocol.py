"""The readout program protocol (`sandbox.readout_protocol`): the /input tree holds no sealed
label and its bytes depend on its content alone; the features a program writes are read like
an uploaded file, and a missing, doubled, linked, special or oversize file is named."""

from __future__ import annotations

import io
import os

import numpy as np
import pandas as pd
import pytest

from leaderboard.errors import InputError
from sandbox.protocol import ProtocolError
from sandbox.readout_protocol import SplitImages, prepare_readout_input, read_features_output

SETTING = {"setting_id": "door-readout-v1", "task": "door", "coordinate": "hinge angle", "unit": "deg"}


def _images(seed: int = 0) -> dict[str, SplitImages]:
    rng = np.random.default_rng(seed)
    out = {}
    for k, split in enumerate(("train", "dev", "confirm")):
        ids = np.array([f"{split}-{i}" for i in range(3)])
        out[split] = SplitImages(ids, {c: rng.integers(0, 256, (3, 8, 8, 3), dtype=np.uint8)
                                       for c in ("agentview", "wrist")})
    return out


def _labels(splits=("train", "dev")) -> pd.DataFrame:
    rows = [{"observation_id": f"{s}-{i}", "split": s, "initialization": f"{s}-i", "kind": "natural",
             "coordinate": float(i)} for s in splits for i in range(3)]
    return pd.DataFrame(rows)


def _observations() -> pd.DataFrame:
    rows = [{"observation_id": f"{s}-{i}", "split": s, "kind": "natural", "shard": "x.npz"}
            for s in ("train", "dev", "confirm") for i in range(3)]
    return pd.DataFrame(rows)


def test_the_tree_holds_the_images_and_public_labels_with_fixed_bytes(tmp_path):
    first = prepare_readout_input(tmp_path / "a", SETTING, _images(), _labels())
    second = prepare_readout_input(tmp_path / "b", SETTING, _images(), _labels())
    names = sorted(p.relative_to(first).as_posix() for p in first.rglob("*") if p.is_file())
    assert names == ["images/confirm.npz", "images/dev.npz", "images/train.npz", "labels.csv", "setting.json"]
    for name in names:
        assert (first / name).read_bytes() == (second / name).read_bytes(), name
        assert oct((first / name).stat().st_mode & 0o777) == "0o644"
    with np.load(first / "images" / "confirm.npz", allow_pickle=False) as z:
        assert z["observation_id"].tolist() == ["confirm-0", "confirm-1", "confirm-2"]
        assert np.array_equal(z["wrist"], _images()["confirm"].cameras["wrist"])


def test_a_sealed_label_is_never_written(tmp_path):
    with pytest.raises(ProtocolError, match=r"field 'labels.split': value 'confirm' is sealed"):
        prepare_readout_input(tmp_path / "in", SETTING, _images(), _labels(("train", "confirm")))
    assert not (tmp_path / "in").exists()


def _write(directory, name: str, ids, values) -> None:
    buffer = io.BytesIO()
    np.savez(buffer, observation_id=np.asarray(ids, dtype=str), features=np.asarray(values))
    (directory / name).write_bytes(buffer.getvalue())


def test_features_are_read_like_an_upload(tmp_path):
    observations = _observations()
    ids = observations["observation_id"]
    _write(tmp_path, "features.npz", ids, np.arange(18.0).reshape(9, 2))
    rep = read_features_output(tmp_path, observations, "mine")
    assert rep.name == "mine" and rep.values.shape == (9, 2) and rep.source == "/output/features.npz"
    _write(tmp_path, "features.npz", ids, np.where(np.arange(9)[:, None] == 4, np.nan, np.ones((9, 2))))
    with pytest.raises(InputError, match=r"/output/features.npz line 6, field 'f0': value 'nan'"):
        read_features_output(tmp_path, observations, "mine")


@pytest.mark.parametrize("case, message", [
    ("none", r"the program wrote no features file"),
    ("both", r"holds both features.npz and features.parquet"),
    ("link", r"/output/features.npz: .*is a symbolic link"),
    ("fifo", r"/output/features.npz: .*is not a regular file"),
    ("large", r"/output/features.npz: .*over the cap of 100"),
])
def test_a_bad_features_file_is_named(tmp_path, case, message):
    observations = _observations()
    if case == "both":
        _write(tmp_path, "features.npz", observations["observation_id"], np.ones((9, 1)))
        (tmp_path / "features.parquet").write_bytes(b"PAR1")
    elif case == "link":
        (tmp_path / "features.npz").symlink_to("/etc/passwd")
    elif case == "fifo":
        os.mkfifo(tmp_path / "features.npz")
    elif case == "large":
        _write(tmp_path, "features.npz", observations["observation_id"], np.ones((9, 1)))
    with pytest.raises(InputError, match=message):
        read_features_output(tmp_path, observations, "mine", max_bytes=100)
