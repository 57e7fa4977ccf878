"""The readout audit's figures (inline SVG), the paper's two plots: prediction against the
actual coordinate per robot context for one initialization, and natural MAE against gain
across representations with their 95% intervals; and the readout leaderboard's two: the
latter with the reference representations in grey (`board_figure`), and the rows' ranking
number with its interval (`ranking_figure`).

Pure functions from numbers to SVG text; labels are escaped by `leaderboard.site.svg`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from leaderboard.site.figures import SERIES_COLOURS, short
from leaderboard.site.svg import PALETTE, circle, legend, line, nice_span, rect, svg_document, text

TICKS = 4
"""Intervals between axis ticks, about: the step is the round number (1, 2, 5 x 10^k) nearest
above span / TICKS, and the axis ends on ticks."""


def _step(span: float) -> float:
    return nice_span(span / TICKS, floor=1e-9)


def _scale(values: Sequence[float]) -> tuple[float, float]:
    """Axis ends on round ticks around `values`."""
    low, high = min(values), max(values)
    if high - low <= 1e-12 * max(abs(high), 1.0):
        low, high = low - 1.0, high + 1.0
    step = _step(high - low)
    return step * math.floor(low / step + 1e-9), step * math.ceil(high / step - 1e-9)


def _ticks(low: float, high: float) -> list[float]:
    step = _step(high - low)
    count = int(round((high - low) / step))
    return [low + i * step for i in range(count + 1)]


def _axes(body: list[str], box: tuple[float, float, float, float], xr, yr, x_label: str, y_label: str) -> None:
    left, top, width, height = box
    bottom = top + height
    body += [line(left, bottom, left + width, bottom), line(left, top, left, bottom)]
    for value in _ticks(*xr):
        x = left + width * (value - xr[0]) / (xr[1] - xr[0])
        body += [line(x, bottom, x, bottom + 4), text(x, bottom + 16, f"{value:.4g}", anchor="middle")]
    for value in _ticks(*yr):
        y = bottom - height * (value - yr[0]) / (yr[1] - yr[0])
        body += [line(left - 4, y, left, y), text(left - 6, y + 4, f"{value:.4g}", anchor="end")]
    body.append(text(left + width / 2, bottom + 34, x_label, anchor="middle"))
    body.append(text(14, top + height / 2, y_label, anchor="middle",
                     transform=f"rotate(-90 14 {top + height / 2:.1f})"))


def response_figure(curve: dict, unit: str, title: str, width: int = 420, height: int = 320) -> str:
    """Prediction against actual coordinate, one line per context, the dashed identity line
    (a readout that follows the coordinate exactly) behind them."""
    contexts = curve.get("contexts") or []
    qs = [q for c in contexts for q in c["coordinate"]]
    ps = [p for c in contexts for p in c["prediction"]]
    box = (62.0, 30.0, width - 80.0, height - 80.0)
    if not qs:
        return svg_document(width, 60, [text(10, 30, "no admitted controlled cell")], title)
    xr = _scale(qs)
    yr = _scale(ps + [xr[0], xr[1]])
    left, top, w, h = box

    def at(q: float, p: float) -> tuple[float, float]:
        return left + w * (q - xr[0]) / (xr[1] - xr[0]), top + h - h * (p - yr[0]) / (yr[1] - yr[0])

    body = legend(left, 14, [(f"context {c['context']}", SERIES_COLOURS[i % len(SERIES_COLOURS)])
                             for i, c in enumerate(contexts)])
    _axes(body, box, xr, yr, f"actual coordinate ({unit})", f"prediction ({unit})")
    (x1, y1), (x2, y2) = at(xr[0], xr[0]), at(xr[1], xr[1])
    body.append(line(x1, y1, x2, y2, PALETTE["oracle"], 1.0, dash="4 3"))
    for i, c in enumerate(contexts):
        colour = SERIES_COLOURS[i % len(SERIES_COLOURS)]
        points = [at(q, p) for q, p in zip(c["coordinate"], c["prediction"])]
        for (ax, ay), (bx, by) in zip(points, points[1:]):
            body.append(line(ax, ay, bx, by, colour, 1.5))
        for (x, y), q, p in zip(points, c["coordinate"], c["prediction"]):
            body.append(circle(x, y, 3, colour, f"context {c['context']}: q {q:.3g}, prediction {p:.3g}"))
    return svg_document(width, height, body, title)


@dataclass(frozen=True)
class RepresentationPoint:
    """One representation's summary: natural MAE and gain, each with its interval."""

    label: str
    mae: float | None
    mae_low: float | None
    mae_high: float | None
    gain: float | None
    gain_low: float | None
    gain_high: float | None


def accuracy_gain_figure(points: Sequence[RepresentationPoint], unit: str, title: str,
                         width: int = 560, height: int = 360) -> str:
    """Natural MAE (x) against gain (y), intervals as whiskers, gain 1 dashed: accurate
    readouts (left) need not respond (gain near 1)."""
    shown = [p for p in points if p.mae is not None and p.gain is not None]
    if not shown:
        return svg_document(width, 60, [text(10, 30, "no representation has both numbers")], title)
    xs = [v for p in shown for v in (p.mae, p.mae_low, p.mae_high) if v is not None] + [0.0]
    ys = [v for p in shown for v in (p.gain, p.gain_low, p.gain_high) if v is not None] + [0.0, 1.0]
    xr, yr = _scale(xs), _scale(ys)
    box = (62.0, 16.0, width - 200.0, height - 66.0)
    left, top, w, h = box

    def at(x: float, y: float) -> tuple[float, float]:
        return left + w * (x - xr[0]) / (xr[1] - xr[0]), top + h - h * (y - yr[0]) / (yr[1] - yr[0])

    body: list[str] = []
    _axes(body, box, xr, yr, f"natural MAE ({unit})", "gain")
    (ax, ay), (bx, _) = at(xr[0], 1.0), at(xr[1], 1.0)
    body += [line(ax, ay, bx, ay, PALETTE["accent"], 1.0, dash="5 3"), text(bx - 4, ay - 4, "gain 1", anchor="end")]
    for i, p in enumerate(shown):
        colour = SERIES_COLOURS[i % len(SERIES_COLOURS)]
        x, y = at(p.mae, p.gain)
        if p.mae_low is not None and p.mae_high is not None:
            body.append(line(at(p.mae_low, p.gain)[0], y, at(p.mae_high, p.gain)[0], y, colour, 1.5))
        if p.gain_low is not None and p.gain_high is not None:
            body.append(line(x, at(p.mae, p.gain_low)[1], x, at(p.mae, p.gain_high)[1], colour, 1.5))
        body.append(circle(x, y, 5, colour, f"{p.label}: natural MAE {p.mae:.3g}, gain {p.gain:.3g}"))
        body += [circle(left + w + 20, top + 10 + 18 * i, 5, colour),
                 text(left + w + 30, top + 14 + 18 * i, short(p.label, 22))]
    return svg_document(width, height, body, title)


REFERENCE_GREY = "#6b6b6b"
"""Colour of the reference representations on the readout leaderboard's plots."""


def _whiskers(body: list[str], at, p: RepresentationPoint, colour: str, dash: str = "") -> None:
    x, y = at(p.mae, p.gain)
    if p.mae_low is not None and p.mae_high is not None:
        body.append(line(at(p.mae_low, p.gain)[0], y, at(p.mae_high, p.gain)[0], y, colour, 1.5, dash=dash))
    if p.gain_low is not None and p.gain_high is not None:
        body.append(line(x, at(p.mae, p.gain_low)[1], x, at(p.mae, p.gain_high)[1], colour, 1.5, dash=dash))


def board_figure(points: Sequence[RepresentationPoint], references: Sequence[RepresentationPoint],
                 unit: str, title: str, width: int = 600) -> str:
    """The paper's plot for a leaderboard: natural MAE (x) against gain (y) of every row with
    its 95% intervals; submissions in colour (circles), the reference representations in grey
    (squares, dashed intervals), gain 1 dashed. An accurate readout (left) need not respond."""
    shown = [p for p in points if p.mae is not None and p.gain is not None]
    refs = [p for p in references if p.mae is not None and p.gain is not None]
    if not shown and not refs:
        return svg_document(width, 60, [text(10, 30, "no representation has both numbers")], title)
    everything = shown + refs
    xs = [v for p in everything for v in (p.mae, p.mae_low, p.mae_high) if v is not None] + [0.0]
    ys = [v for p in everything for v in (p.gain, p.gain_low, p.gain_high) if v is not None] + [0.0, 1.0]
    xr, yr = _scale(xs), _scale(ys)
    height = max(360, 40 + 18 * (len(everything) + 2))
    box = (62.0, 16.0, width - 230.0, 294.0)
    left, top, w, h = box

    def at(x: float, y: float) -> tuple[float, float]:
        return left + w * (x - xr[0]) / (xr[1] - xr[0]), top + h - h * (y - yr[0]) / (yr[1] - yr[0])

    body: list[str] = []
    _axes(body, box, xr, yr, f"natural MAE ({unit})", "gain")
    (ax, ay), (bx, _) = at(xr[0], 1.0), at(xr[1], 1.0)
    body += [line(ax, ay, bx, ay, PALETTE["accent"], 1.0, dash="5 3"), text(bx - 4, ay - 4, "gain 1", anchor="end")]
    key_x, row = left + w + 22, 0
    for p in refs:
        _whiskers(body, at, p, REFERENCE_GREY, dash="3 2")
        x, y = at(p.mae, p.gain)
        body.append(rect(x - 4, y - 4, 8, 8, REFERENCE_GREY,
                         f"reference {p.label}: natural MAE {p.mae:.3g}, gain {p.gain:.3g}"))
        body += [rect(key_x - 4, top + 6 + 18 * row, 8, 8, REFERENCE_GREY),
                 text(key_x + 10, top + 14 + 18 * row, short(p.label, 26), fill="#444444")]
        row += 1
    for i, p in enumerate(shown):
        colour = SERIES_COLOURS[i % len(SERIES_COLOURS)]
        _whiskers(body, at, p, colour)
        x, y = at(p.mae, p.gain)
        body.append(circle(x, y, 5, colour, f"{p.label}: natural MAE {p.mae:.3g}, gain {p.gain:.3g}"))
        body += [circle(key_x, top + 10 + 18 * row, 5, colour),
                 text(key_x + 10, top + 14 + 18 * row, short(p.label, 26))]
        row += 1
    return svg_document(width, height, body, title)


@dataclass(frozen=True)
class IntervalBar:
    """One row of the readout ranking plot: its label, mean and 95% interval."""

    label: str
    mean: float | None
    low: float | None
    high: float | None
    reference: bool = False


def ranking_figure(bars: Sequence[IntervalBar], axis_label: str, title: str, width: int = 600,
                   row_height: int = 24) -> str:
    """One row per representation on one axis: the mean (a dot) and its 95% interval, the
    ranked rows in blue, the reference rows in grey with dashed intervals, below them."""
    if not bars:
        return svg_document(width, 60, [text(10, 30, "no row to draw")], title)
    values = [v for b in bars for v in (b.mean, b.low, b.high) if v is not None] + [0.0]
    xr = _scale(values)
    left, right, top = 180.0, 20.0, 10.0
    plot_w = width - left - right
    bottom = top + row_height * len(bars)

    def x_of(value: float) -> float:
        return left + plot_w * (value - xr[0]) / (xr[1] - xr[0])

    body = [line(left, bottom, left + plot_w, bottom)]
    for value in _ticks(*xr):
        body += [line(x_of(value), bottom, x_of(value), bottom + 4),
                 text(x_of(value), bottom + 16, f"{value:.4g}", anchor="middle")]
    body.append(text(left + plot_w / 2, bottom + 34, axis_label, anchor="middle"))
    for r, bar in enumerate(bars):
        y = top + r * row_height + row_height / 2
        colour = REFERENCE_GREY if bar.reference else PALETTE["rule"]
        body.append(text(left - 8, y + 4, short(bar.label, 26), anchor="end",
                         fill="#444444" if bar.reference else "#222222"))
        if bar.mean is None:
            body.append(text(left + 4, y + 4, "not estimable", fill="#595959"))
            continue
        if bar.low is not None and bar.high is not None:
            body.append(line(x_of(bar.low), y, x_of(bar.high), y, colour, 2.0, dash="4 2" if bar.reference else ""))
            tip = f"{bar.label}: {bar.mean:.3f} [{bar.low:.3f}, {bar.high:.3f}]"
        else:
            tip = f"{bar.label}: {bar.mean:.3f} (no interval)"
        marker = (rect(x_of(bar.mean) - 4, y - 4, 8, 8, colour, tip) if bar.reference
                  else circle(x_of(bar.mean), y, 4.5, colour, tip))
        body.append(marker)
    return svg_document(width, int(bottom + 44), body, title)
