"""The one reader of scores: files, uploads (CSV, Parquet, JSON) and a selector's output.

One module per format (`upload` dispatches to `io_cells`/`fast` for CSV,
`parquet` for Parquet, `json_rows` for JSON; `output` for a selector's
`scores.csv`; `files` for `expaudit audit`'s file), their limits beside them
(`limits`), one validation for all (`table`), and the validated table as a
stored artifact (`stored`) so that an upload is parsed once. Every problem is
an `InputError` naming the file, line, field and value.
"""

from __future__ import annotations

from leaderboard.scores.files import read_inputs, read_scores_file
from leaderboard.scores.limits import UploadLimits, full_file_needs, largest_needs
from leaderboard.scores.output import parse_output
from leaderboard.scores.stored import StoredScoresDamaged, decode_scores, encode_scores
from leaderboard.scores.table import ScoresInput, SettingScores, parse_scores_table
from leaderboard.scores.upload import (FORMATS, FieldError, detect_format, read_frame,
                                       requested_settings, validate_upload)

__all__ = ["FORMATS", "FieldError", "ScoresInput", "SettingScores", "StoredScoresDamaged",
           "UploadLimits", "decode_scores", "detect_format", "encode_scores", "full_file_needs",
           "largest_needs", "parse_output", "parse_scores_table", "read_frame", "read_inputs",
           "read_scores_file", "requested_settings", "validate_upload"]
