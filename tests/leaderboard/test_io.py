"""Reading the audit's input files: the happy path and every error message."""

import numpy as np
import pandas as pd
import pytest

from leaderboard.errors import InputError
from leaderboard.scores import parse_scores_table, read_inputs

EXPERIENCES = "experience_id\ne_old\ne_new\n"
SCENES = "scene_id,state_id,layout_level,appearance_draw\ns1,A,0,0\ns2,A,0,1\ns3,B,2,0\n"


def _outcomes(rows=None):
    if rows is None:
        rows = [
            f"{e},{s},{seed},{int((seed + i + j) % 2)}"
            for i, e in enumerate(["e_old", "e_new"])
            for j, s in enumerate(["s1", "s2", "s3"])
            for seed in (7, 3)
        ]
    return "experience_id,scene_id,seed,success\n" + "\n".join(rows) + "\n"


SCORES = "scene_id,experience_id,score\n" + "".join(
    f"{s},{e},{v}\n"
    for s, e, v in [
        ("s1", "e_old", 0.5),
        ("s1", "e_new", 0.1),
        ("s2", "e_old", -1),
        ("s2", "e_new", 2),
        ("s3", "e_old", 0),
        ("s3", "e_new", 0),
    ]
)


@pytest.fixture
def audit_files(tmp_path):
    """Write the four audit input files; keyword overrides replace one file's text."""

    def write(**texts):
        contents = {"E.csv": EXPERIENCES, "O.csv": _outcomes(), "S.csv": SCENES, "R.csv": SCORES}
        contents.update({f"{key}.csv": value for key, value in texts.items()})
        for name, text in contents.items():
            (tmp_path / name).write_text(text)
        return [str(tmp_path / name) for name in ("E.csv", "O.csv", "S.csv", "R.csv")]

    return write


def _error(paths) -> InputError:
    with pytest.raises(InputError) as info:
        read_inputs(*paths)
    return info.value


def test_reads_library_scene_and_seed_order(audit_files):
    data, scores = read_inputs(*audit_files())
    assert data.experience_ids == ("e_old", "e_new")
    assert data.scenes.scene_ids == ("s1", "s2", "s3")
    assert data.scenes.layout_level.tolist() == [0, 0, 2]
    assert data.outcomes.shape == (2, 3, 2)
    # seeds sorted ascending: seed 3 first; success = (seed + i + j) % 2
    assert data.outcomes[1, 2].tolist() == [(3 + 1 + 2) % 2, (7 + 1 + 2) % 2]
    np.testing.assert_array_equal(scores.scores, [[0.5, -1, 0], [0.1, 2, 0]])
    assert scores.selection_only is False


def test_selection_only_table(audit_files):
    paths = audit_files(R="scene_id,experience_id\ns1,e_new\ns2,e_old\ns3,e_new\n")
    _, scores = read_inputs(*paths)
    assert scores.selection_only is True
    np.testing.assert_array_equal(scores.scores, [[0, 1, 0], [1, 0, 1]])


def test_parquet_is_read_like_csv(audit_files, tmp_path):
    paths = audit_files()
    for index, path in enumerate(paths):
        parquet = path.replace(".csv", ".parquet")
        pd.read_csv(path).to_parquet(parquet)
        paths[index] = parquet
    data, scores = read_inputs(*paths)
    assert data.outcomes.shape == (2, 3, 2)
    np.testing.assert_array_equal(scores.scores, [[0.5, -1, 0], [0.1, 2, 0]])


def test_parquet_nan_score_is_rejected(audit_files):
    paths = audit_files()
    frame = pd.read_csv(paths[3])
    frame.loc[4, "score"] = np.nan
    paths[3] = paths[3].replace(".csv", ".parquet")
    frame.to_parquet(paths[3])
    with pytest.raises(
        InputError, match=r"R\.parquet line 6, field 'score': value 'nan' is not a finite number"
    ):
        read_inputs(*paths)


@pytest.mark.parametrize(
    ("override", "message"),
    [
        (
            {"E": "experience_id\ne1\ne1\n"},
            r"E\.csv line 3, field 'experience_id': value 'e1' repeats the experience_id of line 2",
        ),
        ({"E": 'experience_id\n""\n'}, r"E\.csv line 2, field 'experience_id': value '' is empty"),
        ({"E": "experience_id\n"}, r"E\.csv: has no data rows"),
        ({"E": ""}, r"E\.csv: file is empty \(no header line\)"),
        (
            {"E": "id\ne1\n"},
            r"E\.csv, field 'experience_id': missing column \(expected columns: experience_id\)",
        ),
        (
            {"E": "experience_id,notes\ne1,x\n"},
            r"E\.csv, field 'header': value 'notes' is not a known column",
        ),
        (
            {"S": SCENES + "s1,C,0,0\n"},
            r"S\.csv line 5, field 'scene_id': value 's1' repeats the scene_id of line 2",
        ),
        (
            {"S": SCENES.replace("s3,B,2,0", "s3,B,two,0")},
            r"S\.csv line 4, field 'layout_level': value 'two' is not a number",
        ),
        (
            {"S": SCENES.replace("s3,B,2,0", "s3,B,2.5,0")},
            r"S\.csv line 4, field 'layout_level': value '2\.5' is not an integer",
        ),
        (
            {"S": SCENES.replace("s3,B,2,0", "s3,B,4,0")},
            r"S\.csv line 4, field 'layout_level': value '4' is not a layout level \(0, 1, 2 or 3\)",
        ),
        (
            {"S": SCENES.replace("s3,B,2,0", "s3,B,2,-1")},
            r"S\.csv line 4, field 'appearance_draw': value '-1' is negative",
        ),
        (
            {"S": SCENES.replace("s2,A,0,1", "s2,A,1,1")},
            r"S\.csv line 3, field 'layout_level': value '1' disagrees with layout_level 0 of state 'A' on line 2",
        ),
        (
            {"S": SCENES.replace("s2,A,0,1", "s2,A,0,0")},
            r"S\.csv line 3, field 'state_id, appearance_draw': value 'A, 0' repeats the \(state_id, appearance_draw\) of line 2",
        ),
        (
            {"S": SCENES.replace("s3,B,2,0", "s3,B,,0")},
            r"S\.csv line 4, field 'layout_level': value '' is empty",
        ),
        (
            {"O": _outcomes()[:-1] + "\ne_gone,s1,3,1\n"},
            r"O\.csv line 14, field 'experience_id': value 'e_gone' is not a known experience_id \(not in the experiences file\)",
        ),
        (
            {"O": _outcomes()[:-1] + "\ne_old,s9,3,1\n"},
            r"O\.csv line 14, field 'scene_id': value 's9' is not a known scene_id \(not in the scenes file\)",
        ),
        (
            {"O": _outcomes().replace("e_old,s1,7,1", "e_old,s1,7,2")},
            r"O\.csv line 2, field 'success': value '2' is not a binary outcome \(0 or 1\)",
        ),
        (
            {"O": _outcomes().replace("e_old,s1,7,1", "e_old,s1,7,0.5")},
            r"O\.csv line 2, field 'success': value '0\.5' is not a binary outcome",
        ),
        (
            {"O": _outcomes().replace("e_old,s1,7,1", "e_old,s1,7,nan")},
            r"O\.csv line 2, field 'success': value 'nan' is not a binary outcome",
        ),
        (
            {"O": _outcomes().replace("e_old,s1,7,1", "e_old,s1,seven,1")},
            r"O\.csv line 2, field 'seed': value 'seven' is not a number",
        ),
        (
            {"O": _outcomes()[:-1] + "\ne_old,s1,7,0\n"},
            r"O\.csv line 14, field 'experience_id, scene_id, seed': value 'e_old, s1, 7' repeats the "
            r"\(experience_id, scene_id, seed\) of line 2",
        ),
        (
            {"O": _outcomes().replace("e_new,s2,3,1\n", "")},
            r"O\.csv, field 'experience_id, scene_id, seed': value 'e_new, s2, 3' has no row; every experience "
            r"needs an outcome in every scene for each of the seeds \[3, 7\] \(1 rows missing in all\)",
        ),
        ({"O": "experience_id,scene_id,success\ne_old,s1,1\n"}, r"O\.csv, field 'seed': missing column"),
        (
            {"O": "experience_id,scene_id,seed,success\ne_old,s1,1,1,9\n"},
            r"O\.csv line 2: has 5 fields, the header has 4",
        ),
        (
            {"O": "experience_id,scene_id,seed,success\ne_old,s1,1\n"},
            r"O\.csv line 2: has 3 fields, the header has 4",
        ),
        (
            {"O": _outcomes().replace("e_old,s2,7,0\n", "e_old,s2,7,0\n\n")},
            r"O\.csv line 5: is a blank line; remove it",
        ),
        (
            {"E": 'experience_id\ne1\n"e\n2"\n'},
            r"E\.csv line 3: a quoted field spans several lines; every row must be one line",
        ),
        (
            {"E": "experience_id,experience_id\ne1,e1\n"},
            r"E\.csv, field 'header': has a repeated column name",
        ),
        (
            {"R": SCORES.replace("s2,e_new,2", "s2,e_new,nan")},
            r"R\.csv line 5, field 'score': value 'nan' is not a finite number",
        ),
        (
            {"R": SCORES.replace("s2,e_new,2", "s2,e_new,inf")},
            r"R\.csv line 5, field 'score': value 'inf' is not a finite number",
        ),
        (
            {"R": SCORES.replace("s2,e_new,2", "s2,e_new,high")},
            r"R\.csv line 5, field 'score': value 'high' is not a number",
        ),
        (
            {"R": SCORES.replace("s2,e_new,2", "s2,e_x,2")},
            r"R\.csv line 5, field 'experience_id': value 'e_x' is not a known experience_id of the library",
        ),
        (
            {"R": SCORES.replace("s2,e_new,2", "s4,e_new,2")},
            r"R\.csv line 5, field 'scene_id': value 's4' is not a known scene_id",
        ),
        (
            {"R": SCORES.replace("s2,e_new,2", "s2,e_old,2")},
            r"R\.csv line 5, field 'scene_id, experience_id': value 's2, e_old' repeats the \(scene_id, experience_id\) of line 4",
        ),
        (
            {"R": SCORES.replace("s3,e_new,0\n", "")},
            r"R\.csv, field 'scene_id, experience_id': value 's3, e_new' has no score; every experience needs a score in "
            r"every scene \(1 pairs missing\)",
        ),
        (
            {"R": "scene_id,experience_id\ns1,e_new\ns1,e_old\ns2,e_old\ns3,e_old\n"},
            r"R\.csv line 3, field 'scene_id': value 's1' repeats the selection of scene of line 2",
        ),
        (
            {"R": "scene_id,experience_id\ns1,e_new\ns3,e_old\n"},
            r"R\.csv, field 'scene_id': value 's2' has no selection; a selection-only table needs one row per scene "
            r"\(1 scenes missing\)",
        ),
        ({"R": "scene,experience_id,score\ns1,e_new,1\n"}, r"R\.csv, field 'scene_id': missing column"),
    ],
)
def test_bad_input_names_file_line_field_and_value(audit_files, override, message):
    with pytest.raises(InputError, match=message):
        read_inputs(*audit_files(**override))


def test_error_attributes(audit_files):
    error = _error(audit_files(R=SCORES.replace("s2,e_new,2", "s2,e_new,nan")))
    assert (error.line, error.field, error.value) == (5, "score", "nan")
    assert error.source.endswith("R.csv")
    assert error.message == "is not a finite number"
    assert error.to_dict()["message"] == str(error)


def test_parse_scores_table_for_uploads():
    frame = pd.DataFrame(
        {"scene_id": ["q1", "q1", "q2", "q2"], "experience_id": [1, 2, 1, 2], "score": [0.1, 0.2, 0.3, 0.4]}
    )
    parsed = parse_scores_table(frame, ["1", "2"], ["q1", "q2"], source="upload")
    np.testing.assert_array_equal(parsed.scores, [[0.1, 0.3], [0.2, 0.4]])
    duplicated = pd.DataFrame([["q1", "1", "q1"]], columns=["scene_id", "experience_id", "scene_id"])
    with pytest.raises(InputError, match="upload, field 'header': has a repeated column name"):
        parse_scores_table(duplicated, ["1"], ["q1"], source="upload")
    missing = frame.astype(object)
    missing.loc[1, "score"] = None
    with pytest.raises(InputError, match=r"upload line 3, field 'score': value '' is empty"):
        parse_scores_table(missing, ["1", "2"], ["q1", "q2"], source="upload")
