"""The leaderboard's own figures (inline SVG): A with intervals against the reference lines,
selections of the top rows against the oracle, the cross-setting summary, and the index's
one-figure explanation of the benchmark.

Pure functions from numbers to SVG text; labels are escaped by `leaderboard.site.svg`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from leaderboard.site.svg import (PALETTE, circle, clamped_x, fitted_text, line, rect,
                                  svg_document, text, text_width)

LABEL_CHARS = 28
"""Labels of figures that cannot size their margins to their text (the readout's) are cut to
this many characters, with an ellipsis."""

LABEL_SHARE = 0.45
"""The most of a figure's width its row labels may take: a longer label is cut to fit, its
full name in its tooltip; shorter ones are drawn whole, the margin sized to the longest."""

FONT = 11
"""Font size (px) of the figures' text, but for the ranking figure's."""

RANKING_FONT = 13
"""Font size (px) of the ranking figure's text."""

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
    the accent colour; a row whose value is undefined says so. The label margin is as
    wide as the longest label (up to `LABEL_SHARE` of the width); what the lines and
    colours mean is the caption's to say, so the axis names only the quantity.
    """
    size = RANKING_FONT
    longest = max([text_width(row.label, size) for row in rows] + [text_width("undefined", size)])
    left = math.ceil(min(longest + 16, width * LABEL_SHARE))
    right, top = 16, 14 + 13 * len(markers)
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
        at, anchor = clamped_x(x, marker.label, size, width)
        body.append(text(at, 13 + 13 * m, marker.label, anchor=anchor, fill=colour))
    for r, row in enumerate(rows):
        y = top + r * row_height + row_height / 2
        body.append(fitted_text(left - 8, y + 4, row.label, left - 12, size, anchor="end"))
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
        at, anchor = clamped_x(x_of(tick), f"{tick:g}", size, width)
        body.append(text(at, bottom + 16, f"{tick:g}", anchor=anchor))
    body.append(fitted_text(left + plot_w / 2, bottom + 32, axis_label, plot_w, size,
                            anchor="middle"))
    return svg_document(width, height, body, title, font_size=size)


def _ticks(lo: float, hi: float) -> list[float]:
    span = hi - lo
    step = next((s for s in (0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1.0) if span / s <= 8), 2.0)
    first = step * -(-lo // step)
    ticks, value = [], first
    while value <= hi + 1e-9:
        ticks.append(round(value, 6) + 0.0)
        value += step
    return ticks


SLANT = math.sin(math.radians(45))
"""The experience names under the selection figure are drawn at 45 degrees."""


def selection_figure(experiences: Sequence[str], series: Sequence[tuple[str, Sequence[float]]],
                     oracle: Sequence[float], title: str, width: int = 640,
                     plot_height: int = 156) -> str:
    """Share of scenes given to each experience by the top rows and by the oracle.

    `series` is [(row label, share per experience)], at most four rows; the
    oracle's shares (ties split) are the grey bars behind them. The legend takes as many
    columns (three, two or one) as its longest name allows, names whole where one column
    holds them; the margins below and left hold the slanted experience names.
    """
    entries = [("oracle (ties split)", PALETTE["oracle"])] + [
        (label, SERIES_COLOURS[i % len(SERIES_COLOURS)]) for i, (label, _) in enumerate(series)]
    names = [experience[:24] for experience in experiences]
    slant = max([text_width(name, FONT) for name in names] + [0.0]) * SLANT + FONT
    group_w_guess = (width - 54) / max(len(experiences), 1)
    left = math.ceil(max(44.0, slant + 4 - group_w_guess / 2))
    right = 10
    plot_w = width - left - right
    widest = max(14 + text_width(label, FONT) + 12 for label, _ in entries)
    columns = next((n for n in (3, 2) if widest <= plot_w / n), 1)
    top = 16 + 16 * ((len(entries) + columns - 1) // columns)
    bottom = math.ceil(10 + slant + 4)
    plot_h = plot_height
    height = top + plot_h + bottom
    peak = max([max(oracle, default=0.0)] + [max(v, default=0.0) for _, v in series] + [1e-9])
    group_w = plot_w / max(len(experiences), 1)
    body = []
    for i, (label, colour) in enumerate(entries):
        x, y = left + (i % columns) * (plot_w / columns), 12 + 16 * (i // columns)
        room = min(plot_w / columns, width - x) - 14 - 6
        body += [rect(x, y - 9, 10, 10, colour), fitted_text(x + 14, y, label, room, FONT)]
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
        body.append(text(cx, top + plot_h + 10, names[g], anchor="end",
                         tooltip=experience if names[g] != experience else "",
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


SUMMARY_LABEL_PX = 320
"""The most the summary figure's rule names may take; a longer one is cut, whole in its tooltip."""

HEADER_SLANT = 35
"""Degrees the setting names over the summary figure's columns are turned."""


def summary_figure(rules: Sequence[str], settings: Sequence[str],
                   cells: dict[tuple[str, str], GridCell], title: str,
                   cell_width: int = 96, row_height: int = 24) -> str:
    """Rules x settings: in each cell A with its interval on a [-0.25, 1] scale, best-fixed's A
    as a brown tick; empty where the rule has no row on that setting. The margins hold the
    rule names (up to `SUMMARY_LABEL_PX`) and the slanted setting names whole."""
    sin, cos = math.sin(math.radians(HEADER_SLANT)), math.cos(math.radians(HEADER_SLANT))
    headers = [setting[:40] for setting in settings]
    lengths = [text_width(header, FONT) for header in headers]
    longest_rule = max([text_width(rule, FONT) for rule in rules] + [0.0])
    grid_w = cell_width * max(len(settings), 1)
    left = math.ceil(max(80.0, min(longest_rule + 16, SUMMARY_LABEL_PX)))
    top = math.ceil(max(lengths + [0.0]) * sin + FONT * cos + 14)
    ends = [left + c * cell_width + cell_width / 2 - 6 + length * cos + FONT * sin
            for c, length in enumerate(lengths)]
    width = math.ceil(max([left + grid_w + 10] + [end + 4 for end in ends]))
    height = top + row_height * max(len(rules), 1) + 12
    body = []
    for c, header in enumerate(headers):
        cx = left + c * cell_width + cell_width / 2
        body.append(text(cx - 6, top - 8, header, anchor="start",
                         tooltip=settings[c] if header != settings[c] else "",
                         transform=f"rotate(-{HEADER_SLANT} {cx - 6:.1f} {top - 8:.1f})"))
    for r, rule in enumerate(rules):
        y = top + r * row_height
        if r % 2 == 0:
            body.append(rect(0, y, width, row_height, "#f4f4f4"))
        body.append(fitted_text(left - 8, y + row_height / 2 + 4, rule, left - 12, FONT,
                                anchor="end"))
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
