"""A selector's scores file (`/output/scores.csv`), from its bytes to validated scores.

The sandbox reads the bytes out of the run's output directory (refusing
links, special files and oversize files, `sandbox.protocol.read_output`);
this reads them as CSV and validates them exactly like an uploaded scores
file (`leaderboard.scores.table.parse_scores_table`).
"""

from __future__ import annotations

import io
from typing import Sequence

import pandas as pd

from leaderboard.errors import InputError
from leaderboard.scores.table import ScoresInput, parse_scores_table


def parse_output(data: bytes, experience_ids: Sequence[str], scene_ids: Sequence[str], *,
                 source: str) -> ScoresInput:
    """The validated scores (K, Q) of a selector's CSV `data`; errors name `source`."""
    try:
        frame = pd.read_csv(io.BytesIO(data), dtype=str, keep_default_na=False,
                            na_filter=False, encoding="utf-8")
    except pd.errors.EmptyDataError:
        raise InputError(source, "file is empty (no header line)") from None
    except (pd.errors.ParserError, UnicodeDecodeError, ValueError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise InputError(source, f"cannot be read as CSV: {first}") from exc
    return parse_scores_table(frame, experience_ids, scene_ids, source=source)
