"""The leaderboard's own figures (inline SVG): A with intervals against the reference lines,
selections of the top rows against the oracle, the cross-setting summary, and the index's
one-figure explanation of the benchmark.

Pure functions from numbers to SVG text; labels are escaped by `leaderboard.site.svg`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from leaderboard.site.svg import PALETTE, circle, line, rect, svg_document, text

LABEL_CHARS = 28
"""Row labels longer than this are cut with an ellipsis (the full name is in the tooltip)."""

SERIES_COLOURS = ("#1f77b4", "#2ca02c", "#9467bd", "#8c564b")
"""Colours of the top rows in the selection figure (the oracle is grey)."""

GRID_MIN = -0.25
"""Left end of each summary cell's A scale (lower values are drawn at the end)."""

REFERENCE_COLOURS = {"random": "#666666", "best_fixed": "#b15928", "oracle": "#4d4d4d"}


def short(label: str, limit: int = LABEL_CHARS) -> str:
    return label if len(label) <= limit else label[: limit - 1] + "\u2026"


@dataclass(frozen=True)
class IntervalRow:
    """One row of an interval figure: label, point, 95% interval and whether it matters."""

    label: str
    value: float | None
    low: float | None
    high: float | None
    highlight: bool = False


@dataclass(frozen=True)
class Marker:
    """A vertical reference line (random, best-fixed, oracle) at `value`."""

    key: str
    label: str
    value: float


def _limits(rows: Sequence[IntervalRow], markers: Sequence[Marker]) -> tuple[float, float]:
    values = [v for r in rows for v in (r.value, r.low, r.high) if v is not None]
    values += [m.value for m in markers]
    low, high = min(values, default=0.0), max(values, default=1.0)
    pad = 0.04 * (high - low or 1.0)
    return low - pad, high + pad


def interval_figure(rows: Sequence[IntervalRow], markers: Sequence[Marker], title: str,
                    axis_label: str, width: int = 640, row_height: int = 26) -> str:
    """Point and 95% interval per row on one axis, with dashed reference lines.

    Highlighted rows (beat best-fixed and their shuffle envelope) are drawn in
    the accent colour; a row whose value is undefined says so.
    """
    left, right, top = 210, 16, 14 + 13 * len(markers)
    height = top + row_height * max(len(rows), 1) + 40
    lo, hi = _limits(rows, markers)
    plot_w = width - left - right

    def x_of(value: float) -> float:
        return left + plot_w * (value - lo) / (hi - lo)

    bottom = top + row_height * max(len(rows), 1)
    body = [line(left, bottom, left + plot_w, bottom)]
    for m, marker in enumerate(markers):
        x = x_of(marker.value)
        colour = REFERENCE_COLOURS.get(marker.key, PALETTE["axis"])
        body.append(line(x, top - 4, x, bottom, colour, 1.5, dash="5 3"))
        body.append(text(x, 13 + 13 * m, marker.label, anchor="middle", fill=colour))
    for r, row in enumerate(rows):
        y = top + r * row_height + row_height / 2
        body.append(text(left - 8, y + 4, short(row.label), anchor="end"))
        if row.value is None:
            body.append(text(left + 4, y + 4, "undefined", fill="#595959"))
            continue
        colour = PALETTE["accent"] if row.highlight else PALETTE["rule"]
        if row.low is not None and row.high is not None:
            body.append(line(x_of(row.low), y, x_of(row.high), y, colour, 2.0))
            tip = f"{row.label}: {row.value:.3f} [{row.low:.3f}, {row.high:.3f}]"
        else:
            tip = f"{row.label}: {row.value:.3f} (no interval)"
        body.append(circle(x_of(row.value), y, 4.5, colour, tip))
    ticks = _ticks(lo, hi)
    for tick in ticks:
        body.append(line(x_of(tick), bottom, x_of(tick), bottom + 4))
        body.append(text(x_of(tick), bottom + 16, f"{tick:g}", anchor="middle"))
    body.append(text(left + plot_w / 2, bottom + 32, axis_label, anchor="middle"))
    return svg_document(width, height, body, title, font_size=13)


def _ticks(lo: float, hi: float) -> list[float]:
    span = hi - lo
    step = next((s for s in (0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1.0) if span / s <= 8), 2.0)
    first = step * -(-lo // step)
    ticks, value = [], first
    while value <= hi + 1e-9:
        ticks.append(round(value, 6) + 0.0)
        value += step
    return ticks


def selection_figure(experiences: Sequence[str], series: Sequence[tuple[str, Sequence[float]]],
                     oracle: Sequence[float], title: str, width: int = 640,
                     height: int = 250) -> str:
    """Share of scenes given to each experience by the top rows and by the oracle.

    `series` is [(row label, share per experience)], at most four rows; the
    oracle's shares (ties split) are the grey bars behind them.
    """
    left, right, top, bottom = 44, 10, 16 + 16 * ((len(series) + 2) // 3), 62
    plot_w, plot_h = width - left - right, height - top - bottom
    peak = max([max(oracle, default=0.0)] + [max(v, default=0.0) for _, v in series] + [1e-9])
    group_w = plot_w / max(len(experiences), 1)
    body = []
    entries = [("oracle (ties split)", PALETTE["oracle"])] + [
        (short(label, 24), SERIES_COLOURS[i % len(SERIES_COLOURS)])
        for i, (label, _) in enumerate(series)]
    for i, (label, colour) in enumerate(entries):
        x, y = left + (i % 3) * (plot_w / 3), 12 + 16 * (i // 3)
        body += [rect(x, y - 9, 10, 10, colour), text(x + 14, y, label)]
    body.append(line(left, top + plot_h, left + plot_w, top + plot_h))
    body.append(line(left, top, left, top + plot_h))
    for tick in (0.0, 0.5, 1.0):
        y = top + plot_h * (1 - tick)
        body.append(text(left - 4, y + 4, f"{tick * peak:.2f}", anchor="end"))
    for g, experience in enumerate(experiences):
        x0 = left + g * group_w
        h = plot_h * oracle[g] / peak
        body.append(rect(x0 + group_w * 0.05, top + plot_h - h, group_w * 0.9, h,
                         PALETTE["oracle"], f"{experience} oracle: {oracle[g]:.3f}"))
        bar_w = group_w * 0.7 / max(len(series), 1)
        for s, (label, values) in enumerate(series):
            h = plot_h * values[g] / peak
            body.append(rect(x0 + group_w * 0.15 + s * bar_w, top + plot_h - h, bar_w, h,
                             SERIES_COLOURS[s % len(SERIES_COLOURS)],
                             f"{experience} {label}: {values[g]:.3f}"))
        cx = x0 + group_w / 2
        body.append(text(cx, top + plot_h + 10, short(experience, 14), anchor="end",
                         transform=f"rotate(-45 {cx:.1f} {top + plot_h + 10:.1f})"))
    body.append(text(12, top + plot_h / 2, "share of scenes", anchor="middle",
                     transform=f"rotate(-90 12 {top + plot_h / 2:.1f})"))
    return svg_document(width, height, body, title)


@dataclass(frozen=True)
class GridCell:
    """A of one rule on one setting, with its interval and best-fixed's A there."""

    value: float | None
    low: float | None
    high: float | None
    best_fixed: float | None
    highlight: bool = False


def summary_figure(rules: Sequence[str], settings: Sequence[str],
                   cells: dict[tuple[str, str], GridCell], title: str,
                   cell_width: int = 96, row_height: int = 24) -> str:
    """Rules x settings: in each cell A with its interval on a [-0.25, 1] scale, best-fixed's A
    as a brown tick; empty where the rule has no row on that setting."""
    left, top = 190, 96
    width = left + cell_width * max(len(settings), 1) + 10
    height = top + row_height * max(len(rules), 1) + 12
    body = []
    for c, setting in enumerate(settings):
        cx = left + c * cell_width + cell_width / 2
        body.append(text(cx - 6, top - 8, short(setting, 22), anchor="start",
                         transform=f"rotate(-35 {cx - 6:.1f} {top - 8:.1f})"))
    for r, rule in enumerate(rules):
        y = top + r * row_height
        if r % 2 == 0:
            body.append(rect(0, y, width, row_height, "#f4f4f4"))
        body.append(text(left - 8, y + row_height / 2 + 4, short(rule), anchor="end"))
        for c, setting in enumerate(settings):
            x0 = left + c * cell_width + 6
            scale = cell_width - 12

            def x_of(value: float, x0: float = x0, scale: float = scale) -> float:
                return x0 + scale * (min(max(value, GRID_MIN), 1.0) - GRID_MIN) / (1 - GRID_MIN)

            mid = y + row_height / 2
            body.append(line(x0, mid, x0 + scale, mid, "#d9d9d9"))
            cell = cells.get((rule, setting))
            if cell is None:
                continue
            if cell.best_fixed is not None:
                bx = x_of(cell.best_fixed)
                body.append(line(bx, mid - 7, bx, mid + 7, REFERENCE_COLOURS["best_fixed"], 2.0))
            if cell.value is None:
                body.append(text(x0 + 2, mid + 4, "n/a", fill="#595959"))
                continue
            colour = PALETTE["accent"] if cell.highlight else PALETTE["rule"]
            if cell.low is not None and cell.high is not None:
                body.append(line(x_of(cell.low), mid, x_of(cell.high), mid, colour, 2.0))
            tip = f"{rule} on {setting}: A {cell.value:.3f}" + (
                f" [{cell.low:.3f}, {cell.high:.3f}]" if cell.low is not None else "")
            body.append(circle(x_of(cell.value), mid, 4, colour, tip))
    return svg_document(width, height, body, title)


def explainer_figure(width: int = 460, height: int = 170) -> str:
    """The A scale as the board reads it: random at 0, oracle at 1, best-fixed between;
    a rule matters only right of best-fixed and above its shuffle envelope. Drawn small
    with large type, so it stays legible on a phone."""
    left, right, y = 14, 14, 84
    plot_w = width - left - right

    def x_of(value: float) -> float:
        return left + plot_w * value

    body = [rect(x_of(0.6), y - 18, x_of(1.0) - x_of(0.6), 36, "#fde0dd"),
            line(left, y, left + plot_w, y, PALETTE["axis"], 2.0),
            text(x_of(0.8), y - 24, "matters", anchor="middle")]
    for value, label, key, label_y, anchor in (
            (0.0, "random: A = 0", "random", y - 44, "start"),
            (0.6, "best-fixed", "best_fixed", y + 44, "middle"),
            (1.0, "oracle: A = 1", "oracle", y - 44, "end")):
        colour = REFERENCE_COLOURS[key]
        body.append(line(x_of(value), y - 32, x_of(value), y + 30, colour, 2.0, dash="5 3"))
        body.append(text(x_of(value), label_y, label, anchor=anchor, fill=colour))
    body.append(circle(x_of(0.32), y, 7, PALETTE["rule"], "a rule below best-fixed"))
    body.append(text(x_of(0.32), y + 26, "below best-fixed", anchor="middle"))
    body.append(circle(x_of(0.8), y, 7, PALETTE["accent"], "a rule that matters"))
    body.append(text(left + plot_w / 2, height - 8, "A = (success - random) / (oracle - random)",
                     anchor="middle"))
    return svg_document(width, height, body, "How the leaderboard reads a result", font_size=14)
