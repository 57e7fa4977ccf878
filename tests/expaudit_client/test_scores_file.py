"""The client's own check of a scores file (standard library only) refuses what the service's
reader refuses, with the service's words: each file below has one defect, and both readers
name the same file, line, field and value for it. Valid files pass both."""

from __future__ import annotations

import json

import pytest

from expaudit_client import BadScoresFile
from expaudit_client.scores_file import SettingIds, check_scores_file
from leaderboard.errors import InputError
from leaderboard.scores.table import parse_scores_table
from leaderboard.scores.upload import detect_format, read_frame

IDS = SettingIds("s", ("e0", "e1"), ("q0", "q1"))
HEADER = "scene_id,experience_id,score\n"
FULL = ["q0,e0,1.5", "q0,e1,-2e-3", "q1,e0,0", "q1,e1,7"]


def _csv(rows, header=HEADER) -> str:
    return header + "".join(row + "\n" for row in rows)


BAD = {
    "nan score": _csv(FULL[:3] + ["q1,e1,nan"]),
    "underscored number": _csv(FULL[:3] + ["q1,e1,1_000"]),
    "empty score": _csv(FULL[:3] + ["q1,e1,"]),
    "text score": _csv(FULL[:3] + ["q1,e1,high"]),
    "unknown column": _csv([r + ",x" for r in FULL], HEADER.strip() + ",note\n"),
    "missing column": _csv(["q0,1", "q1,2"], "scene_id,score\n"),
    "repeated pair": _csv(FULL + ["q0,e0,3"]),
    "unknown scene": _csv(FULL[:3] + ["q9,e1,1"]),
    "unknown experience": _csv(FULL[:3] + ["q1,e9,1"]),
    "missing pair": _csv(FULL[:3]),
    "empty id": _csv(FULL[:3] + [",e1,1"]),
    "blank line": HEADER + "q0,e0,1\n\n" + _csv(FULL[1:], ""),
    "short row": _csv(FULL[:3] + ["q1,e1"]),
    "header only": HEADER,
    "selection repeats a scene": _csv(["q0,e0", "q1,e1", "q0,e1"], "scene_id,experience_id\n"),
    "selection misses a scene": _csv(["q0,e0"], "scene_id,experience_id\n"),
    "json unknown key": json.dumps([{"scene_id": "q0", "experience_id": "e0", "scores": 1}]),
    "json not an object": json.dumps([{"scene_id": "q0", "experience_id": "e0", "score": 1}, 3]),
    "json empty list": "[]",
    "json broken": '[{"scene_id": "q0",',
    "json nan": json.dumps([{"scene_id": s, "experience_id": e, "score": 1.0 if s == "q0"
                             else float("nan")} for s in IDS.scene_ids
                            for e in IDS.experience_ids]),
}


def _service_error(path) -> str:
    data = path.read_bytes()
    try:
        frame = read_frame(data, detect_format(path.name, None, None), str(path))
        parse_scores_table(frame, IDS.experience_ids, IDS.scene_ids, source=str(path))
    except InputError as exc:
        return str(exc)
    raise AssertionError(f"the service's reader accepts {path.name}")


@pytest.mark.parametrize("case", sorted(BAD))
def test_the_client_refuses_what_the_service_refuses_in_its_words(case, tmp_path):
    path = tmp_path / ("scores.json" if case.startswith("json") else "scores.csv")
    path.write_text(BAD[case])
    expected = _service_error(path)
    with pytest.raises(BadScoresFile) as refused:
        check_scores_file(path, ids=IDS)
    assert str(refused.value) == expected


def test_a_defect_in_the_ids_alone_needs_the_setting_to_be_found(tmp_path):
    path = tmp_path / "scores.csv"
    path.write_text(BAD["missing pair"])
    summary = check_scores_file(path)  # without the setting's ids: well formed
    assert (summary.rows, summary.complete, summary.selection_only) == (3, None, False)


@pytest.mark.parametrize("name, text, rows", [
    ("scores.csv", _csv(FULL), 4),
    ("scores.csv", _csv(["q0,e1", "q1,e0"], "scene_id,experience_id\n"), 2),
    ("scores.json", json.dumps({"rows": [dict(zip(("scene_id", "experience_id", "score"),
                                                   r.split(","))) for r in FULL]}), 4),
])
def test_valid_files_pass_both_readers(name, text, rows, tmp_path):
    path = tmp_path / name
    path.write_text(text)
    frame = read_frame(path.read_bytes(), detect_format(name, None, None), name)
    parse_scores_table(frame, IDS.experience_ids, IDS.scene_ids, source=name)
    summary = check_scores_file(path, ids=IDS)
    assert summary.complete is True and summary.rows == rows


def test_a_setting_id_column_names_the_settings(tmp_path):
    path = tmp_path / "scores.csv"
    path.write_text("setting_id,scene_id,experience_id,score\na,q0,e0,1\nb,q0,e0,2\na,q1,e0,3\n")
    assert check_scores_file(path).settings == ("a", "b")


@pytest.mark.parametrize("name, data, message", [
    ("scores.txt", b"scene_id,experience_id,score\n", "cannot tell the format"),
    ("scores.parquet", b"scene_id,experience_id,score\n", "is not a Parquet file"),
    ("scores.csv", b"", "file is empty"),
    ("scores.csv", b"scene_id,experience_id,score\nq0,e0,\xff\n", "is not UTF-8 text"),
])
def test_files_refused_before_their_rows_are_read(name, data, message, tmp_path):
    path = tmp_path / name
    path.write_bytes(data)
    with pytest.raises(BadScoresFile, match=message):
        check_scores_file(path)


def test_a_parquet_file_is_read_where_pyarrow_is_installed(tmp_path):
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    path = tmp_path / "scores.parquet"
    pq.write_table(pa.table({"scene_id": ["q0", "q0"], "experience_id": ["e0", "e0"],
                             "score": [1.0, 2.0]}), path)
    with pytest.raises(BadScoresFile, match=r"line 3, field 'scene_id, experience_id'"):
        check_scores_file(path)
