"""Bank and representation files: every problem names the file, line, field and value."""

import json
import shutil

import numpy as np
import pandas as pd
import pytest

from leaderboard.errors import InputError
from leaderboard.readout.bank import read_bank
from leaderboard.readout.inputs import read_features, read_predictions
from tests.support.readout_bank import write_bank


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    return write_bank(tmp_path_factory.mktemp("readout-files"))


@pytest.fixture
def bank_copy(files, tmp_path):
    target = tmp_path / "bank"
    shutil.copytree(files["bank"], target)
    return target


def test_reads_public_and_sealed_labels(files):
    public = read_bank(files["bank"])
    assert public.labelled_splits() == ("train", "dev") and public.info.n_contexts == 4
    sealed = read_bank(files["bank"], files["sealed"])
    assert sealed.labelled_splits() == ("train", "dev", "confirm", "eval") and sealed.sealed_read
    assert int(sealed.labels["admitted"].sum()) == 32 * 24 - 4


def test_label_errors(bank_copy, files):
    labels = pd.read_parquet(bank_copy / "labels.parquet")
    labels.loc[30, "grid_index"] = 6
    labels.to_parquet(bank_copy / "labels.parquet", index=False)
    with pytest.raises(InputError, match=r"labels.parquet line 32, field 'grid_index': value '6' is outside 0..5"):
        read_bank(bank_copy)


def test_sealed_split_in_public_labels_is_refused(bank_copy, files):
    labels = pd.read_parquet(bank_copy / "labels.parquet")
    labels.loc[0, "split"] = "confirm"
    labels.to_parquet(bank_copy / "labels.parquet", index=False)
    with pytest.raises(InputError, match="line 2, field 'split': value 'confirm' is not one of train, dev"):
        read_bank(bank_copy)


def test_label_of_an_unknown_observation(bank_copy, files):
    sealed = pd.read_parquet(files["sealed"])
    sealed.loc[2, "observation_id"] = "nowhere"
    sealed.to_parquet(bank_copy / "sealed.parquet", index=False)
    with pytest.raises(InputError, match="sealed.parquet line 4, field 'observation_id': value 'nowhere' is not an "
                                         "observation of observations.parquet"):
        read_bank(bank_copy, bank_copy / "sealed.parquet")


def test_admitted_cell_needs_a_coordinate(bank_copy):
    labels = pd.read_parquet(bank_copy / "labels.parquet")
    row = int(np.flatnonzero(labels["kind"] == "controlled")[0])
    labels.loc[row, "coordinate"] = np.nan
    labels.to_parquet(bank_copy / "labels.parquet", index=False)
    with pytest.raises(InputError, match=f"line {row + 2}, field 'coordinate': value 'nan' is not a finite number"):
        read_bank(bank_copy)


def test_bank_json_errors(bank_copy):
    info = json.loads((bank_copy / "bank.json").read_text())
    del info["unit"]
    (bank_copy / "bank.json").write_text(json.dumps(info))
    with pytest.raises(InputError, match="bank.json, field 'unit': is missing"):
        read_bank(bank_copy)


def test_feature_file_errors(files, tmp_path):
    frame = pd.read_parquet(files["weak"])
    frame.rename(columns={"f1": "g1"}).to_parquet(tmp_path / "names.parquet", index=False)
    with pytest.raises(InputError, match="field 'header': value 'g1' feature columns must be f0, f1, ... in order"):
        read_features(tmp_path / "names.parquet", "x")
    frame.loc[7, "f2"] = np.inf
    frame.to_parquet(tmp_path / "inf.parquet", index=False)
    with pytest.raises(InputError, match="inf.parquet line 9, field 'f2': value 'inf' is not a finite number"):
        read_features(tmp_path / "inf.parquet", "x")
    np.savez(tmp_path / "dup.npz", observation_id=np.array(["a", "b", "a"]), features=np.zeros((3, 2)))
    with pytest.raises(InputError, match="dup.npz line 4, field 'observation_id': value 'a' appears twice"):
        read_features(tmp_path / "dup.npz", "x")
    np.savez(tmp_path / "obj.npz", observation_id=np.array(["a", None], dtype=object), features=np.zeros((2, 2)))
    with pytest.raises(InputError, match="cannot be read as NPZ without pickle"):
        read_features(tmp_path / "obj.npz", "x")


def test_prediction_file_errors(tmp_path):
    (tmp_path / "p.csv").write_text("observation_id,prediction,extra\na,1.0,2\n")
    with pytest.raises(InputError, match="field 'header': value 'extra' is not a known column"):
        read_predictions(tmp_path / "p.csv", "x")
    (tmp_path / "q.csv").write_text("observation_id,prediction\na,1.0\n,2.0\n")
    with pytest.raises(InputError, match="q.csv line 3, field 'observation_id': value '' must be a non-empty string"):
        read_predictions(tmp_path / "q.csv", "x")
    rep = read_predictions(_write(tmp_path / "ok.csv", "observation_id,prediction\na,1.5\nb,-2\n"), "ok")
    assert list(rep.ids) == ["a", "b"] and list(rep.values) == [1.5, -2.0]


def _write(path, text):
    path.write_text(text)
    return path
