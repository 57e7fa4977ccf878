"""Reading CSV/Parquet tables and parsing cells: the file-level errors."""

import pandas as pd
import pytest

from leaderboard.errors import InputError
from leaderboard.io_cells import Cells, read_table


def test_read_table_rejects_unknown_types_and_missing_files(tmp_path):
    with pytest.raises(InputError, match=r"x\.xlsx: unsupported file type '\.xlsx': use \.csv or \.parquet"):
        read_table(tmp_path / "x.xlsx")
    with pytest.raises(InputError, match=r"nothing\.csv: file not found"):
        read_table(tmp_path / "nothing.csv")
    broken = tmp_path / "broken.parquet"
    broken.write_text("not parquet")
    with pytest.raises(InputError, match=r"broken\.parquet: cannot be read as parquet: "):
        read_table(broken)


def test_read_table_names_a_directory_and_an_unreadable_file(tmp_path):
    (tmp_path / "d.csv").mkdir()
    with pytest.raises(InputError, match=r"d\.csv: is a directory, not a file"):
        read_table(tmp_path / "d.csv")
    unreadable = tmp_path / "mem.csv"
    unreadable.symlink_to("/proc/self/mem")  # a file whose read fails (EIO), even for root
    with pytest.raises(InputError, match=r"mem\.csv: cannot be read: "):
        read_table(unreadable)


def test_non_utf8_csv_is_rejected(tmp_path):
    path = tmp_path / "E.csv"
    path.write_bytes(b"experience_id\ne\xff1\n")
    with pytest.raises(InputError, match=r"E\.csv: is not UTF-8 text \(bad byte at offset 15\)"):
        read_table(path)


def test_csv_cells_are_text_and_lines_count_the_header(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("a,b\n 1,x\n2,\n")
    frame = read_table(path)
    assert frame.to_dict("list") == {"a": [" 1", "2"], "b": ["x", ""]}
    cells = Cells(frame, "t.csv")
    assert cells.integers("a") == [1, 2]
    with pytest.raises(InputError, match=r"t\.csv line 3, field 'b': value '' is empty"):
        cells.ids("b")


def test_integers_accept_integral_floats_from_parquet():
    cells = Cells(pd.DataFrame({"seed": [1.0, 2.0], "x": [0.5, float("inf")]}), "upload")
    assert cells.integers("seed") == [1, 2]
    with pytest.raises(InputError, match=r"upload line 2, field 'x': value '0\.5' is not an integer"):
        cells.integers("x")
    with pytest.raises(InputError, match=r"upload line 3, field 'x': value 'inf' is not a finite number"):
        cells.finite("x")


def test_csv_parser_errors_are_input_errors(tmp_path):
    path = tmp_path / "big.csv"
    path.write_text("experience_id\n" + "x" * 200_000 + "\n")
    with pytest.raises(InputError, match=r"big\.csv: cannot be read: field larger than field limit"):
        read_table(path)
