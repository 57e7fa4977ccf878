"""The columnar outcome and score readers give exactly what the strict reader gives, or step aside.

For well-formed files they must return the strict reader's tensor or
matrix; for every kind of malformed or unusual file `read_inputs` must give
the strict reader's result or its error, word for word (the columnar reader
returns None and the strict one runs).
"""

import numpy as np
import pandas as pd
import pytest

import leaderboard.io
import leaderboard.scores.files
import leaderboard.scores.table
from leaderboard.errors import InputError
from leaderboard.scores import read_inputs
from leaderboard.outcomes_fast import fast_outcomes
from leaderboard.scores.fast import fast_scores

K, Q, S = 4, 6, 3


def _write_setting(directory, outcome_text: bytes | None = None, parquet: pd.DataFrame | None = None,
                   scores: bytes | None = None):
    rng = np.random.default_rng(0)
    (directory / "experiences.csv").write_text("experience_id\n" + "".join(f"e{i}\n" for i in range(K)))
    (directory / "scenes.csv").write_text(
        "scene_id,state_id,layout_level,appearance_draw\n"
        + "".join(f"s{j},t{j // 2},0,{j % 2}\n" for j in range(Q)))
    (directory / "scores.csv").write_bytes(scores or (
        "scene_id,experience_id,score\n" + "".join(f"s{j},e{i},{rng.normal()}\n" for i in range(K) for j in range(Q))
    ).encode())
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


def _both(directory, path, monkeypatch, scores_path=None):
    """read_inputs with the columnar readers and with the strict one only: the outcome tensor
    (or the score matrix and selection-only flag, given `scores_path`) or the error text."""
    def run():
        try:
            data, submitted = read_inputs(directory / "experiences.csv", path, directory / "scenes.csv",
                                          scores_path or directory / "scores.csv")
        except InputError as exc:
            return str(exc)
        return data.outcomes if scores_path is None else (submitted.scores, submitted.selection_only)

    with_fast = run()
    monkeypatch.setattr(leaderboard.io, "fast_outcomes", lambda *args: None)
    monkeypatch.setattr(leaderboard.scores.files, "fast_scores", lambda *args: None)
    strict = run()
    monkeypatch.undo()
    return with_fast, strict


def _same(with_fast, strict):
    if isinstance(strict, str):
        assert with_fast == strict
    elif isinstance(strict, tuple):
        np.testing.assert_array_equal(with_fast[0], strict[0])
        assert with_fast[1] == strict[1]
    else:
        np.testing.assert_array_equal(with_fast, strict)


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
    _same(*_both(tmp_path, path, monkeypatch))


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


def _score_rows(text=repr):
    rng = np.random.default_rng(2)
    return [f"s{j},e{i},{text(float(rng.normal() * 10.0 ** int(rng.integers(-8, 8))))}" for i in range(K) for j in range(Q)]


def _scores_csv(rows, header="scene_id,experience_id,score", end="\n"):
    return (header + end + end.join(rows) + end).encode()


SCORES_VALID = {
    "repr": _scores_csv(_score_rows()),
    "crlf": _scores_csv(_score_rows(), end="\r\n"),
    "plain decimals": _scores_csv(_score_rows(lambda v: f"{v:.4f}")),
    "exponents": _scores_csv(_score_rows(lambda v: f"{v:E}")),
    "signs and points": _scores_csv(["s0,e0,+1", "s1,e0,.5", "s2,e0,5."] + _score_rows()[3:]),
    "columns reordered": _scores_csv([",".join(reversed(r.split(","))) for r in _score_rows()],
                                     header="score,experience_id,scene_id"),
}

SCORES_ODD = {
    "space": _scores_csv(["s0,e0, 1.0"] + _score_rows()[1:]),
    "underscore": _scores_csv(["s0,e0,1_000"] + _score_rows()[1:]),
    "inf": _scores_csv(["s0,e0,inf"] + _score_rows()[1:]),
    "overflow": _scores_csv(["s0,e0,1e999"] + _score_rows()[1:]),
    "nan": _scores_csv(["s0,e0,nan"] + _score_rows()[1:]),
    "non-ASCII digit": _scores_csv(["s0,e0,\u0661"] + _score_rows()[1:]),
    "quoted": _scores_csv(['s0,e0,"1.5"'] + _score_rows()[1:]),
    "empty": _scores_csv(["s0,e0,"] + _score_rows()[1:]),
    "missing pair": _scores_csv(_score_rows()[1:]),
    "repeated pair": _scores_csv([_score_rows()[1]] + _score_rows()[1:]),
    "unknown scene": _scores_csv(["s9,e0,1"] + _score_rows()[1:]),
    "selection-only": _scores_csv([f"s{j},e{j % K}" for j in range(Q)], header="scene_id,experience_id"),
    "extra column": _scores_csv([r + ",x" for r in _score_rows()], header="scene_id,experience_id,score,note"),
}


@pytest.mark.parametrize("name", sorted(SCORES_VALID))
def test_well_formed_scores_take_the_columnar_path_and_match(tmp_path, monkeypatch, name):
    _write_setting(tmp_path, VALID["plain"], scores=SCORES_VALID[name])
    ids = tuple(f"e{i}" for i in range(K)), tuple(f"s{j}" for j in range(Q))
    assert fast_scores(tmp_path / "scores.csv", *ids) is not None
    with_fast, strict = _both(tmp_path, tmp_path / "outcomes.csv", monkeypatch, tmp_path / "scores.csv")
    assert isinstance(strict, tuple)
    _same(with_fast, strict)


@pytest.mark.parametrize("name", sorted(SCORES_ODD))
def test_odd_scores_give_the_strict_readers_result_word_for_word(tmp_path, monkeypatch, name):
    _write_setting(tmp_path, VALID["plain"], scores=SCORES_ODD[name])
    _same(*_both(tmp_path, tmp_path / "outcomes.csv", monkeypatch, tmp_path / "scores.csv"))


@pytest.mark.parametrize("kind", ["float64", "float32", "int64", "text", "nan", "index"])
def test_parquet_scores_match_the_strict_reader(tmp_path, monkeypatch, kind):
    frame = pd.DataFrame([r.split(",") for r in _score_rows()], columns=["scene_id", "experience_id", "score"])
    if kind in ("float64", "float32"):
        frame["score"] = frame["score"].astype(kind)
    elif kind == "int64":
        frame["score"] = (frame["score"].astype(float) * 1000).round().astype("int64")
    elif kind == "nan":
        frame["score"] = frame["score"].astype(float)
        frame.loc[3, "score"] = np.nan
    elif kind == "index":
        frame = frame.set_index("scene_id")
    _write_setting(tmp_path, VALID["plain"])
    path = tmp_path / "scores.parquet"
    frame.to_parquet(path, index=kind == "index")
    _same(*_both(tmp_path, tmp_path / "outcomes.csv", monkeypatch, path))


def _upload_result(frame, monkeypatch, fast: bool):
    from leaderboard.scores import parse_scores_table

    if not fast:
        monkeypatch.setattr(leaderboard.scores.table, "fast_score_frame", lambda *args: None)
    try:
        parsed = parse_scores_table(frame, [f"e{i}" for i in range(K)], [f"s{j}" for j in range(Q)],
                                    source="upload.csv")
        return parsed.scores, parsed.selection_only
    except InputError as exc:
        return str(exc)
    finally:
        monkeypatch.undo()


@pytest.mark.parametrize("name", sorted(SCORES_VALID) + sorted(SCORES_ODD))
def test_uploaded_csv_is_read_and_checked_as_the_strict_reader_does(monkeypatch, name):
    """An upload: the columnar frame equals the strict reader's, and the score check's result or
    error is the strict one's, word for word."""
    from leaderboard.io_cells import read_csv_bytes
    from leaderboard.scores.fast import plain_csv_frame

    data = {**SCORES_VALID, **SCORES_ODD}[name]
    strict_frame = read_csv_bytes(data, "upload.csv")
    frame = plain_csv_frame(data)
    if frame is not None:
        pd.testing.assert_frame_equal(frame, strict_frame)
    elif name in SCORES_VALID:
        pytest.fail("a well-formed upload was not read as columns")
    _same(_upload_result(strict_frame, monkeypatch, fast=True), _upload_result(strict_frame, monkeypatch, fast=False))


@pytest.mark.parametrize("value", [1.5, 2, None, True, "1.5", float("nan")])
def test_json_like_cells_are_checked_as_the_strict_reader_does(monkeypatch, value):
    rows = [r.split(",") for r in _score_rows()]
    frame = pd.DataFrame(rows, columns=["scene_id", "experience_id", "score"], dtype=object)
    frame.loc[0, "score"] = value
    _same(_upload_result(frame, monkeypatch, fast=True), _upload_result(frame, monkeypatch, fast=False))
    numeric = frame.assign(score=pd.to_numeric(frame["score"], errors="coerce").astype(float))
    _same(_upload_result(numeric, monkeypatch, fast=True), _upload_result(numeric, monkeypatch, fast=False))
