"""The readout leaderboard's reading: submissions ranked by controlled MAE, reference rows beside.

A readout setting ranks its public submissions by their mean controlled MAE over the
confirm initializations (lower first): the error where only the coordinate changes, which
a readout that merely follows what co-varies with it on natural trajectories cannot keep
low. Rank = 1 + the number of ranked rows whose 95% interval lies wholly below this row's,
so rows that cannot be told apart share a rank; a row whose controlled MAE is not
estimable is listed last without a rank. The reference representations of the bank's
reference report are shown beside them, not ranked. Pure functions of the rows.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from leaderboard.site.readout_entries import PRIMARY, ReadoutEntry

RANK_BY = "mae_controlled"
"""The number the readout leaderboard is ordered by (lower is better)."""

HYPOTHESES = {"gain_below_one": "gain < 1", "controlled_above_natural": "controlled MAE > natural MAE"}
"""The two primary tests per representation, by the last part of their test id."""


@dataclass(frozen=True)
class Number:
    """One summary number of a row as the pages print it."""

    mean: float | None
    low: float | None
    high: float | None
    n: int
    reason: str | None

    @property
    def text(self) -> str:
        return "n/a" if self.mean is None else f"{self.mean:.3f}"

    @property
    def interval(self) -> str:
        return "" if self.low is None or self.high is None else f"[{self.low:.3f}, {self.high:.3f}]"

    @property
    def sort(self) -> str:
        return "" if self.mean is None else repr(self.mean)


def number(entry: ReadoutEntry, metric: str) -> Number:
    block = entry.summary.get(metric) or {}
    reason = block.get("reason") or (None if block.get("mean") is not None else "not reported")
    return Number(block.get("mean"), block.get("low"), block.get("high"), int(block.get("n") or 0), reason)


@dataclass(frozen=True)
class ReadoutRow:
    """One row of a readout setting page."""

    entry: ReadoutEntry
    rank: int | None
    numbers: dict
    tests: dict
    """hypothesis key -> (in direction, non-tied) counts of the row's primary sign tests."""

    def to_json(self) -> dict:
        e = self.entry
        return {"row_id": e.row_id, "display_name": e.display_name, "kind": e.kind, "rank": self.rank,
                "submitter": e.submitter or None, "submitted_at": e.submitted_at or None,
                "report_html": f"../reports/{e.row_id}.html", "report_json": f"../reports/{e.row_id}.json",
                "summary": {m: {"mean": n.mean, "low": n.low, "high": n.high, "n": n.n, "reason": n.reason}
                            for m, n in self.numbers.items()},
                "sign_tests": {k: {"in_direction": a, "non_tied": b} for k, (a, b) in self.tests.items()}}


def _tests(entry: ReadoutEntry) -> dict:
    out = {}
    for test in (entry.report.get("primary_tests") or {}).get("tests") or []:
        key = test["test_id"].rsplit("/", 1)[-1]
        if key in HYPOTHESES:
            out[key] = (test["n_positive"], test["n_positive"] + test["n_negative"])
    return out


def _row(entry: ReadoutEntry, rank: int | None) -> ReadoutRow:
    numbers = {m: number(entry, m) for m in (*PRIMARY, "slope")}
    return ReadoutRow(entry, rank, numbers, _tests(entry))


def _order_key(entry: ReadoutEntry) -> tuple:
    mean = number(entry, RANK_BY).mean
    return (mean is None, mean if mean is not None else 0.0, entry.submitted_at, entry.row_id)


def ranked_rows(entries: Sequence[ReadoutEntry]) -> list[ReadoutRow]:
    """The submissions in ranked order (`RANK_BY`, lower first; ties by time, then id)."""
    ordered = sorted((e for e in entries if e.kind == "submission"), key=_order_key)
    spans = []
    for e in ordered:
        n = number(e, RANK_BY)
        spans.append(None if n.mean is None else (n.low if n.low is not None else n.mean,
                                                  n.high if n.high is not None else n.mean))
    rows = []
    for e, span in zip(ordered, spans):
        rank = None if span is None else 1 + sum(1 for other in spans if other is not None and other[1] < span[0])
        rows.append(_row(e, rank))
    return rows


def reference_rows(entries: Sequence[ReadoutEntry]) -> list[ReadoutRow]:
    """The reference representations, in the reference report's order, not ranked."""
    return [_row(e, None) for e in entries if e.kind == "reference"]
