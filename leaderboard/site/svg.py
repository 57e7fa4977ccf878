"""Small inline-SVG chart helpers (no JavaScript, no external assets).

Shared by the audit report page and the leaderboard pages. Every label is
escaped: experience and scene ids come from users.
"""

from __future__ import annotations

import math
from html import escape

PALETTE = {
    "rule": "#1f77b4",
    "oracle": "#bbbbbb",
    "accent": "#d62728",
    "envelope": "#9ecae1",
    "axis": "#444444",
}
"""Colours: the rule in blue, references in grey, significant results in red."""


GLYPH_EM = dict(zip([chr(c) for c in range(32, 127)], (
    0.318, 0.401, 0.46, 0.838, 0.636, 0.95, 0.78, 0.275, 0.39, 0.39, 0.5, 0.838,
    0.318, 0.361, 0.318, 0.337, 0.636, 0.636, 0.636, 0.636, 0.636, 0.636, 0.636, 0.636,
    0.636, 0.636, 0.337, 0.337, 0.838, 0.838, 0.838, 0.531, 1.0, 0.684, 0.686, 0.698,
    0.77, 0.632, 0.575, 0.775, 0.752, 0.295, 0.295, 0.656, 0.557, 0.863, 0.748, 0.787,
    0.603, 0.787, 0.695, 0.635, 0.611, 0.732, 0.684, 0.989, 0.685, 0.611, 0.685, 0.39,
    0.337, 0.39, 0.838, 0.5, 0.5, 0.613, 0.635, 0.55, 0.635, 0.615, 0.352, 0.635,
    0.634, 0.278, 0.278, 0.579, 0.278, 0.974, 0.634, 0.612, 0.635, 0.635, 0.411, 0.521,
    0.392, 0.634, 0.592, 0.818, 0.592, 0.592, 0.525, 0.636, 0.337, 0.636, 0.838,
)))
"""Advance width (em) of each printable ASCII character in DejaVu Sans, the sans-serif that
Linux browsers pick and the widest of the common ones: a width reckoned from it holds for
Arial and Helvetica too. Any other character counts as 1 em."""


def text_width(label: str, size: float) -> float:
    """How wide `label` is drawn at font size `size` (px), at most (`GLYPH_EM`)."""
    return size * sum(GLYPH_EM.get(character, 1.0) for character in label)


def fit(label: str, room: float, size: float) -> str:
    """`label` whole where it fits in `room` px at `size`, else cut with an ellipsis to fit."""
    if text_width(label, size) <= room:
        return label
    while label and text_width(label + "\u2026", size) > room:
        label = label[:-1]
    return label + "\u2026"


def _fmt(value: float) -> str:
    return f"{value:.1f}"


def nice_span(largest: float, floor: float = 0.01) -> float:
    """The smallest 1, 2 or 5 times a power of ten at or above `largest` (and `floor`),
    so axis ends read as round numbers."""
    target = max(abs(largest), floor)
    exponent = math.floor(math.log10(target))
    for step in (1.0, 2.0, 5.0, 10.0):
        value = step * 10.0 ** exponent
        if value >= target * (1 - 1e-12):
            return value
    return 10.0 ** (exponent + 1)


def tick_label(value: float, span: float, signed: bool = True) -> str:
    """An axis number with as many decimals as the span needs; zero is plain "0"."""
    decimals = max(0, -math.floor(math.log10(span)) + 1) if span > 0 else 3
    if abs(value) < 0.5 * 10.0 ** -decimals:
        return "0"
    return f"{value:+.{decimals}f}" if signed else f"{value:.{decimals}f}"


MIN_LABEL_PX = 10
"""The smallest a label may be drawn on screen (CSS px): a plot never shrinks below the width
at which its text is this tall; on a narrower screen it scrolls sideways in its own box."""


def svg_document(width: int, height: int, body: list[str], title: str,
                 font_size: int = 11) -> str:
    """Wrap SVG elements in an <svg> root with an accessible <title>, in a box of its own.

    The plot scales down to its container, keeping its proportions, but not below the width
    at which `font_size` (the smallest text it draws) renders `MIN_LABEL_PX` tall; a narrower
    screen (a phone) scrolls the box sideways, never the page."""
    least = min(width, math.ceil(width * MIN_LABEL_PX / font_size))
    return (
        f'<div class="plot" role="group" tabindex="0" aria-label="{escape(title)}" '
        f'style="max-width:100%;overflow-x:auto">'
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img" aria-label="{escape(title)}" '
        f'style="max-width:100%;min-width:{least}px;height:auto;display:block" '
        f'font-family="sans-serif" font-size="{font_size}">'
        f"<title>{escape(title)}</title>" + "".join(body) + "</svg></div>"
    )


def text(x: float, y: float, label: str, anchor: str = "start", tooltip: str = "",
         **attrs: str) -> str:
    """A text element; `label` is escaped. A `tooltip` (the full name of a cut label) is the
    <title> of a group around it."""
    extra = "".join(f' {k.replace("_", "-")}="{escape(str(v))}"' for k, v in attrs.items())
    element = (f'<text x="{_fmt(x)}" y="{_fmt(y)}" text-anchor="{anchor}"{extra}>'
               f'{escape(label)}</text>')
    return f"<g><title>{escape(tooltip)}</title>{element}</g>" if tooltip else element


def fitted_text(x: float, y: float, label: str, room: float, size: float,
                anchor: str = "start", **attrs: str) -> str:
    """A text element of `label` fitted to `room` px (`fit`); where cut, the full label is
    its tooltip."""
    shown = fit(label, room, size)
    return text(x, y, shown, anchor, tooltip=label if shown != label else "", **attrs)


def clamped_x(x: float, label: str, size: float, width: float, margin: float = 2.0
              ) -> tuple[float, str]:
    """Where and how to anchor a label centred on `x` so that it stays inside [0, width]:
    (x, "middle"), or pinned to an edge with "start" or "end"."""
    half = text_width(label, size) / 2
    if x - half < margin:
        return margin, "start"
    if x + half > width - margin:
        return width - margin, "end"
    return x, "middle"


def line(
    x1: float,
    y1: float,
    x2: float,
    y2: float,
    color: str = PALETTE["axis"],
    width: float = 1.0,
    dash: str = "",
) -> str:
    """A straight line, optionally dashed."""
    dashed = f' stroke-dasharray="{dash}"' if dash else ""
    return (
        f'<line x1="{_fmt(x1)}" y1="{_fmt(y1)}" x2="{_fmt(x2)}" y2="{_fmt(y2)}" '
        f'stroke="{color}" stroke-width="{width}"{dashed}/>'
    )


def rect(x: float, y: float, w: float, h: float, color: str, tooltip: str = "") -> str:
    """A filled rectangle with an optional hover tooltip (an SVG <title>)."""
    tip = f"<title>{escape(tooltip)}</title>" if tooltip else ""
    return f'<rect x="{_fmt(x)}" y="{_fmt(y)}" width="{_fmt(max(w, 0.0))}" height="{_fmt(max(h, 0.0))}" fill="{color}">{tip}</rect>'


def circle(x: float, y: float, r: float, color: str, tooltip: str = "") -> str:
    """A filled circle with an optional tooltip."""
    tip = f"<title>{escape(tooltip)}</title>" if tooltip else ""
    return f'<circle cx="{_fmt(x)}" cy="{_fmt(y)}" r="{_fmt(r)}" fill="{color}">{tip}</circle>'


def legend(x: float, y: float, entries: list[tuple[str, str]]) -> list[str]:
    """Colour swatches with labels in one row starting at (x, y)."""
    out = []
    for label, color in entries:
        out += [rect(x, y - 9, 10, 10, color), text(x + 14, y, label)]
        x += 24 + 7 * len(label)
    return out


def grouped_bars(
    categories: list[str],
    series: list[tuple[str, list[float], str]],
    title: str,
    y_label: str = "",
    width: int = 720,
    height: int = 260,
) -> str:
    """Vertical grouped bar chart: one group per category, one bar per series.

    `series` is [(name, values aligned with categories, colour)].
    """
    left, right, top, bottom = 44, 10, 24, 70
    plot_w, plot_h = width - left - right, height - top - bottom
    top_value = max([max(values) for _, values, _ in series if values] + [1e-9])
    group_w = plot_w / max(len(categories), 1)
    bar_w = group_w * 0.8 / max(len(series), 1)
    body = legend(left, 14, [(name, color) for name, _, color in series])
    body.append(line(left, top + plot_h, left + plot_w, top + plot_h))
    body.append(line(left, top, left, top + plot_h))
    for tick in (0.0, 0.5, 1.0):
        y = top + plot_h * (1 - tick)
        body.append(text(left - 4, y + 4, f"{tick * top_value:.3g}", anchor="end"))
    for g, category in enumerate(categories):
        x0 = left + g * group_w + group_w * 0.1
        for s, (name, values, color) in enumerate(series):
            h = plot_h * values[g] / top_value
            body.append(
                rect(x0 + s * bar_w, top + plot_h - h, bar_w, h, color, f"{category} {name}: {values[g]:.3g}")
            )
        cx = left + (g + 0.5) * group_w
        body.append(
            text(
                cx,
                top + plot_h + 10,
                category,
                anchor="end",
                transform=f"rotate(-45 {_fmt(cx)} {_fmt(top + plot_h + 10)})",
            )
        )
    if y_label:
        body.append(
            text(
                12,
                top + plot_h / 2,
                y_label,
                anchor="middle",
                transform=f"rotate(-90 12 {_fmt(top + plot_h / 2)})",
            )
        )
    return svg_document(width, height, body, title)


def interval_rows(
    rows: list[tuple[str, float | None, float | None, float | None, bool]],
    title: str,
    width: int = 720,
    row_height: int = 34,
) -> str:
    """Horizontal point-and-interval chart, one row per (label, point, low, high, highlight).

    The interval is drawn as a band around zero-centred axes; a highlighted
    point (outside its envelope) is drawn in the accent colour. Rows whose
    point is None are labelled "not computed".
    """
    left, right, top = 150, 20, 16
    height = top + row_height * len(rows) + 26
    values = [v for _, p, lo, hi, _ in rows for v in (p, lo, hi) if v is not None]
    span = nice_span(max([abs(v) for v in values] + [0.0]) * 1.1)
    plot_w = width - left - right

    def x_of(value: float) -> float:
        return left + plot_w * (value + span) / (2 * span)

    body = [line(x_of(0.0), top - 6, x_of(0.0), top + row_height * len(rows), dash="4 3")]
    for r, (label, point, low, high, highlight) in enumerate(rows):
        y = top + r * row_height + row_height / 2
        body.append(text(left - 8, y + 4, label, anchor="end"))
        if point is None:
            body.append(text(x_of(0.0) + 6, y + 4, "not computed"))
            continue
        if low is not None and high is not None:
            body.append(
                rect(
                    x_of(low),
                    y - 7,
                    x_of(high) - x_of(low),
                    14,
                    PALETTE["envelope"],
                    f"{label} envelope [{low:+.3f}, {high:+.3f}]",
                )
            )
        color = PALETTE["accent"] if highlight else PALETTE["rule"]
        body.append(circle(x_of(point), y, 5, color, f"{label}: {point:+.3f}"))
    axis_y = top + row_height * len(rows) + 14
    for tick in (-span, -span / 2, 0.0, span / 2, span):
        body.append(line(x_of(tick), axis_y - 12, x_of(tick), axis_y - 9))
        body.append(text(x_of(tick), axis_y, tick_label(tick, span), anchor="middle"))
    return svg_document(width, height, body, title)


def value_bars(
    labels: list[str],
    values: list[float | None],
    title: str,
    reference: float | None = None,
    maximum: float = 1.0,
    width: int = 480,
    row_height: int = 30,
) -> str:
    """Horizontal bars on [0, maximum] with an optional dashed reference line (e.g. chance 0.5)."""
    left, right, top = 150, 50, 10
    height = top + row_height * len(labels) + 22
    plot_w = width - left - right
    body = []
    for r, (label, value) in enumerate(zip(labels, values)):
        y = top + r * row_height
        body.append(text(left - 8, y + row_height / 2 + 4, label, anchor="end"))
        if value is None:
            body.append(text(left + 4, y + row_height / 2 + 4, "not computable"))
            continue
        w = plot_w * max(0.0, min(value, maximum)) / maximum
        body.append(rect(left, y + 5, w, row_height - 10, PALETTE["rule"], f"{label}: {value:.3f}"))
        body.append(text(left + w + 4, y + row_height / 2 + 4, f"{value:.3f}"))
    if reference is not None:
        x = left + plot_w * reference / maximum
        body.append(line(x, top, x, top + row_height * len(labels), PALETTE["accent"], dash="4 3"))
        body.append(text(x, top + row_height * len(labels) + 14, f"{reference:g}", anchor="middle"))
    return svg_document(width, height, body, title)
