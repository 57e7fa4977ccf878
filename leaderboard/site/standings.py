"""Where each published row stands on its setting: the audit's reading, not a race on success.

Pure functions from report dicts to frozen results; no I/O. The published pages
(`leaderboard.site.build`) only format what is decided here: whether a setting
discriminates (`leaderboard.metrics.discrimination`, the paper's bar beside it), where
A is undefined (`defaults.ADVANTAGE_MIN_DENOMINATOR`: rows ranked by success), the
hindsight rows as reference lines, the CI-aware rank of every other row, and its two
marks (beats best-fixed; gap above its shuffle envelope). The rules, with their
numbers: docs/leaderboard.md ("How rows are ranked").
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from leaderboard.metrics import defaults
from leaderboard.metrics.discrimination import MIN_GAP, RANDOM_RANGE, noise_shortfall, shortfall

REFERENCE_LINES = ("random", "oracle", "best_fixed")
"""Hindsight rows drawn as reference lines: the floor, the ceiling, one good experience."""

RANK_BY_ADVANTAGE = "advantage"
RANK_BY_SUCCESS = "success_rule"


@dataclass(frozen=True)
class Estimate:
    """A point value with its 95% interval (either may be None)."""

    value: float | None
    low: float | None = None
    high: float | None = None

    @property
    def has_interval(self) -> bool:
        return self.low is not None and self.high is not None

    def bounds(self) -> tuple[float, float] | None:
        """The interval, or the point as a zero-width interval, or None."""
        if self.has_interval:
            return self.low, self.high
        if self.value is not None:
            return self.value, self.value
        return None

    def to_json(self) -> dict:
        return {"value": self.value, "interval": ({"low": self.low, "high": self.high}
                                                  if self.has_interval else None)}


def estimate(report: dict, name: str) -> Estimate:
    """`reference[name]` of a report with `intervals[name]` (missing sections give None)."""
    value = (report.get("reference") or {}).get(name)
    found = (report.get("intervals") or {}).get(name) or {}
    low, high = found.get("low"), found.get("high")
    return Estimate(None if value is None else float(value),
                    None if low is None or high is None else float(low),
                    None if low is None or high is None else float(high))


@dataclass(frozen=True)
class Discrimination:
    """Whether a setting discriminates, whether A is defined on it, and the measured reason;
    None where no published report says yet.

    `rule` names what decided it ("noise-aware", or "paper's bar" for a report made before the
    rule); `paper_bar` is the paper's reading beside it (its verdict and reason), `noise` the
    oracle bracket, headroom_cf with its interval and the noise null (None without them).
    """

    discriminates: bool | None
    oracle_minus_random: float | None
    reason: str
    advantage_defined: bool | None = None
    rule: str | None = None
    paper_bar: dict | None = None
    noise: dict | None = None

    def to_json(self) -> dict:
        return {"discriminates": self.discriminates, "advantage_defined": self.advantage_defined,
                "oracle_minus_random": self.oracle_minus_random, "reason": self.reason,
                "rule": self.rule, "paper_bar": self.paper_bar, "noise": self.noise}


NOISE_AWARE = "noise-aware"
PAPER_BAR = "paper's bar"


def _paper_bar(random: float, oracle: float) -> tuple[bool, str]:
    low, high = RANDOM_RANGE
    missing = shortfall(random, oracle)
    if missing is None:
        return True, (f"oracle - random = {oracle:.3f} - {random:.3f} = {oracle - random:.3f} "
                      f"(at least {MIN_GAP:.2f}) and random success {random:.3f} within "
                      f"{low:.2f}-{high:.2f}")
    return False, missing


def _noise_reading(report: dict, random: float) -> tuple[bool, str, dict] | None:
    """(discriminates, reason, the noise numbers) from a report's noise block; None without one."""
    noise = report.get("noise") or {}
    interval = (report.get("intervals") or {}).get("headroom_cf") or {}
    if noise.get("headroom_cf") is None or interval.get("low") is None:
        return None
    low_end, high_end = float(interval["low"]), float(interval["high"])
    numbers = {"oracle_bracket": noise.get("oracle_bracket"), "headroom_cf": noise["headroom_cf"],
               "headroom_cf_interval": [low_end, high_end], "null_p95": noise.get("null_p95"),
               "null_p_value": noise.get("null_p_value"), "n_null": noise.get("n_null")}
    missing = noise_shortfall(random, low_end)
    if missing is None:
        low, high = RANDOM_RANGE
        return True, (f"headroom_cf (cross-fitted oracle - random) = {noise['headroom_cf']:.3f}, "
                      f"95% interval [{low_end:.3f}, {high_end:.3f}] above 0, and random success "
                      f"{random:.3f} within {low:.2f}-{high:.2f}"), numbers
    return False, missing, numbers


def discrimination(reports: Sequence[dict]) -> Discrimination:
    """Read the setting's label from the first report that gives oracle and random success.

    They depend on the data only, so any report of the setting gives them. The noise-aware
    rule decides where the report has its block; otherwise the paper's bar, named as such.
    """
    threshold = defaults.ADVANTAGE_MIN_DENOMINATOR
    for report in reports:
        reference = report.get("reference") or {}
        oracle, random = reference.get("success_oracle"), reference.get("success_random")
        if oracle is None or random is None:
            continue
        oracle, random = float(oracle), float(random)
        spread = round(oracle - random, 6)
        defined = spread >= threshold
        paper_ok, paper_reason = _paper_bar(random, oracle)
        paper = {"discriminates": paper_ok, "reason": paper_reason, "oracle_minus_random": spread}
        reading = _noise_reading(report, random)
        if reading is None:
            found, reason, numbers, rule = paper_ok, paper_reason, None, PAPER_BAR
        else:
            (found, reason, numbers), rule = reading, NOISE_AWARE
        if not found and not defined:
            reason += (f"; with oracle - random below {threshold} A is undefined and no rule can be "
                       f"told apart from random here")
        return Discrimination(found, spread, reason, defined, rule, paper, numbers)
    return Discrimination(None, None, "no published report gives oracle and random success yet")


@dataclass(frozen=True)
class ReferenceLine:
    """A hindsight row (or the report's own reference block) shown as a line."""

    rule: str
    label: str
    success: Estimate
    advantage: float | None
    experience: str | None = None
    submission_id: str | None = None

    def to_json(self) -> dict:
        return {"rule": self.rule, "label": self.label, "success": self.success.to_json(),
                "advantage": self.advantage, "experience": self.experience,
                "submission_id": self.submission_id}


REFERENCE_LABELS = {"random": "random (A = 0)", "best_fixed": "best-fixed",
                    "oracle": "oracle (A = 1)"}


def reference_lines(reports: Sequence[dict],
                    reference_rows: dict[str, tuple[str, dict]]) -> list[ReferenceLine]:
    """Random, best-fixed and oracle, from any report's reference block.

    `reference_rows` maps a hindsight rule to (row id, report) when that row is
    published, so the line links to it; the numbers are the same in every
    report of the setting (they depend on the data only).
    """
    source = next((r for r in reports if (r.get("reference") or {}).get("success_oracle")
                   is not None), None)
    if source is None:
        return []
    reference = source["reference"]
    best_fixed = estimate(source, "success_best_fixed")
    lines = [
        ReferenceLine("random", REFERENCE_LABELS["random"],
                      Estimate(reference.get("success_random")), 0.0),
        ReferenceLine("best_fixed", REFERENCE_LABELS["best_fixed"], best_fixed,
                      reference.get("best_fixed_advantage"), reference.get("best_fixed")),
        ReferenceLine("oracle", REFERENCE_LABELS["oracle"],
                      Estimate(reference.get("success_oracle")), 1.0),
    ]
    out = []
    for line in lines:
        if line.success.value is None:
            continue  # a sealed report releases random and oracle only
        row = reference_rows.get(line.rule)
        out.append(line if row is None else ReferenceLine(
            line.rule, line.label, line.success, line.advantage, line.experience, row[0]))
    return out


@dataclass(frozen=True)
class Standing:
    """One ranked row: its A and success, its CI-aware rank and the two marks.

    `beats_best_fixed` compares the row's success with best-fixed's (None when
    either is missing); `beats_shuffle` is True when its gap lies above the
    shuffle envelope, False when inside or below, None when not computed.
    """

    row_id: str
    advantage: Estimate
    success: Estimate
    rank: int | None
    beats_best_fixed: bool | None
    best_fixed_distance: float | None
    beats_shuffle: bool | None
    gap_direction: str | None

    @property
    def matters(self) -> bool:
        """Per-scene selection shown: beats best-fixed and the frequency-matched shuffle."""
        return bool(self.beats_best_fixed and self.beats_shuffle)

    def to_json(self) -> dict:
        return {"rank": self.rank, "advantage": self.advantage.to_json(),
                "success_rule": self.success.to_json(),
                "beats_best_fixed": self.beats_best_fixed,
                "best_fixed_distance": self.best_fixed_distance,
                "beats_shuffle": self.beats_shuffle, "gap_direction": self.gap_direction,
                "matters": self.matters}


def standing(row_id: str, report: dict) -> Standing:
    """The marks of one row (its rank is set by `rank_rows`)."""
    reference = report.get("reference") or {}
    success, best = reference.get("success_rule"), reference.get("success_best_fixed")
    distance = None if success is None or best is None else round(success - best, 6)
    gap = (report.get("gap") or {}).get("all") or {}
    direction = gap.get("direction") if gap.get("gap") is not None else None
    if gap.get("gap") is None:
        shuffle = None
    else:
        shuffle = bool(gap.get("gap_significant")) and direction != "below"
    return Standing(row_id, estimate(report, "advantage"), estimate(report, "success_rule"),
                    None, None if distance is None else distance > 0, distance, shuffle,
                    direction)


def rank_metric(found: Discrimination) -> str:
    """Rank by A, or by success where A is undefined (oracle - random below the threshold)."""
    return RANK_BY_SUCCESS if found.advantage_defined is False else RANK_BY_ADVANTAGE


def _metric(row: Standing, metric: str) -> Estimate:
    return row.advantage if metric == RANK_BY_ADVANTAGE else row.success


def rank_rows(rows: Sequence[Standing], metric: str) -> list[Standing]:
    """Order by the metric (undefined last) and give each row its CI-aware rank.

    rank = 1 + number of rows whose interval lies wholly above this row's
    interval (a row without an interval counts as its point); a row whose
    metric is undefined has no rank.
    """
    bounds = {row.row_id: _metric(row, metric).bounds() for row in rows}
    ranked = []
    for row in rows:
        own = bounds[row.row_id]
        rank = None
        if own is not None:
            rank = 1 + sum(1 for other, b in bounds.items()
                           if other != row.row_id and b is not None and b[0] > own[1])
        ranked.append(Standing(row.row_id, row.advantage, row.success, rank,
                               row.beats_best_fixed, row.best_fixed_distance, row.beats_shuffle,
                               row.gap_direction))

    def order(row: Standing) -> tuple:
        value = _metric(row, metric).value
        return (value is None, -(value or 0.0), row.rank or 0)

    return sorted(ranked, key=order)
