"""The columnar outcome reader gives exactly what the strict reader gives, or steps aside.

For well-formed files it must return the strict reader's tensor; for every
kind of malformed or unusual file `read_inputs` must give the strict
reader's tensor or its error, word for word (the columnar reader returns
None and the strict one runs).
"""

import numpy as np
import pandas as pd
import pytest

import leaderboard.io
from leaderboard.errors import InputError
from leaderboard.io import read_inputs
from leaderboard.outcomes_fast import fast_outcomes

K, Q, S = 4, 6, 3


def _write_setting(directory, outcome_text: bytes | None = None, parquet: pd.DataFrame | None = None):
    rng = np.random.default_rng(0)
    (directory / "experiences.csv").write_text("experience_id\n" + "".join(f"e{i}\n" for i in range(K)))
    (directory / "scenes.csv").write_text(
        "scene_id,state_id,layout_level,appearance_draw\n"
        + "".join(f"s{j},t{j // 2},0,{j % 2}\n" for j in range(Q)))
    (directory / "scores.csv").write_text(
        "scene_id,experience_id,score\n" + "".join(f"s{j},e{i},{rng.normal()}\n" for i in range(K) for j in range(Q)))
    if parquet is not None:
        path = directory / "outcomes.parquet"
        parquet.to_parquet(path, index=False)
        return path
    path = directory / "outcomes.csv"
    path.write_bytes(outcome_text)
    return path


def _rows(seed_text=str, success_text=str, order=(0, 1, 2, 3)):
    rng = np.random.default_rng(1)
    rows = []
    for i in range(K):
        for j in range(Q):
            for s in range(S):
                row = (f"e{i}", f"s{j}", seed_text(10 * s), success_text(int(rng.integers(0, 2))))
                rows.append(",".join(row[c] for c in order))
    return rows


def _csv(rows, header="experience_id,scene_id,seed,success", end="\n", final=True):
    return (header + end + end.join(rows) + (end if final else "")).encode()


def _both(directory, path, monkeypatch):
    """read_inputs with the columnar reader and with the strict one only: tensor or error text."""
    def run():
        try:
            return read_inputs(directory / "experiences.csv", path, directory / "scenes.csv",
                               directory / "scores.csv")[0].outcomes
        except InputError as exc:
            return str(exc)

    with_fast = run()
    monkeypatch.setattr(leaderboard.io, "fast_outcomes", lambda *args: None)
    strict = run()
    monkeypatch.undo()
    return with_fast, strict


VALID = {
    "plain": _csv(_rows()),
    "crlf": _csv(_rows(), end="\r\n"),
    "no final newline": _csv(_rows(), final=False),
    "columns reordered": _csv(_rows(order=(3, 2, 1, 0)), header="success,seed,scene_id,experience_id"),
}

ODD = {
    "quoted id": _csv(['"e0",s0,0,1'] + _rows()[1:]),
    "blank line": _csv(_rows()[:5] + [""] + _rows()[5:]),
    "byte-order mark": b"\xef\xbb\xbf" + _csv(_rows()),
    "bare CR": _csv(_rows(), end="\r"),
    "success 1.0": _csv(_rows(success_text=lambda v: f"{v}.0")),
    "seed with a space": _csv(_rows(seed_text=lambda v: f" {v}")),
    "seed 00": _csv(_rows(seed_text=lambda v: f"0{v}")),
    "negative seed": _csv(_rows(seed_text=lambda v: f"-{v}")),
    "success 2": _csv(_rows()[:-1] + ["e3,s5,20,2"]),
    "unknown experience": _csv(["e9,s0,0,1"] + _rows()[1:]),
    "empty scene": _csv(["e0,,0,1"] + _rows()[1:]),
    "repeated row": _csv(_rows() + [_rows()[0]]),
    "missing row": _csv(_rows()[1:]),
    "repeated instead of missing": _csv([_rows()[1]] + _rows()[1:]),
    "extra column": _csv([r + ",x" for r in _rows()], header="experience_id,scene_id,seed,success,note"),
    "short row": _csv(_rows()[:3] + ["e0,s1,0"] + _rows()[4:]),
    "long row": _csv(_rows()[:3] + [_rows()[3] + ",1"] + _rows()[4:]),
    "not UTF-8": _csv(_rows()).replace(b"e0,", b"\xff0,", 1),
    "header only": _csv([]),
    "empty": b"",
    "repeated header name": _csv(_rows(), header="experience_id,scene_id,seed,seed"),
}


@pytest.mark.parametrize("name", sorted(VALID))
def test_well_formed_csv_takes_the_columnar_path_and_matches(tmp_path, monkeypatch, name):
    path = _write_setting(tmp_path, VALID[name])
    assert fast_outcomes(path, tuple(f"e{i}" for i in range(K)), tuple(f"s{j}" for j in range(Q))) is not None
    with_fast, strict = _both(tmp_path, path, monkeypatch)
    assert isinstance(strict, np.ndarray)
    np.testing.assert_array_equal(with_fast, strict)


@pytest.mark.parametrize("name", sorted(ODD))
def test_odd_csv_gives_the_strict_readers_result_word_for_word(tmp_path, monkeypatch, name):
    path = _write_setting(tmp_path, ODD[name])
    with_fast, strict = _both(tmp_path, path, monkeypatch)
    if isinstance(strict, str):
        assert with_fast == strict
    else:
        np.testing.assert_array_equal(with_fast, strict)


@pytest.mark.parametrize("kind", ["integers", "text", "floats", "booleans", "index"])
def test_parquet_matches_the_strict_reader(tmp_path, monkeypatch, kind):
    frame = pd.DataFrame([row.split(",") for row in _rows()], columns=["experience_id", "scene_id", "seed", "success"])
    if kind == "integers":
        frame = frame.astype({"seed": "int64", "success": "int64"})
    elif kind == "floats":
        frame = frame.astype({"seed": "float64", "success": "float64"})
    elif kind == "booleans":
        frame = frame.astype({"seed": "int64"}).assign(success=frame["success"] == "1")
    elif kind == "index":
        frame = frame.astype({"seed": "int64", "success": "int64"}).set_index("experience_id")
    path = _write_setting(tmp_path, parquet=frame)
    with_fast, strict = _both(tmp_path, path, monkeypatch)
    if isinstance(strict, str):
        assert with_fast == strict
    else:
        np.testing.assert_array_equal(with_fast, strict)
