"""Inline-SVG figures of the findings page, redrawn from this benchmark's reports.

- `gap_vs_share`: discrimination gap against top-pick share, each with its
  shuffle envelope (paper Fig. 1);
- `k_panel`: Stack Replay at K = 3, 10, 50: top-pick share against the
  oracle's, gap with envelope, A against best-fixed's A (paper Fig. 3);
- `own_base_vs_cross`: own-base success against mean cross-scene success
  (paper Fig. 2).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from leaderboard.site.svg import PALETTE, circle, line, rect, svg_document, text

RULE_COLORS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#17becf",
               "#bcbd22", "#7f7f7f")


@dataclass(frozen=True)
class Axes:
    """A plotting area: pixel box plus data limits; `x()` and `y()` map data to pixels."""

    left: float
    top: float
    width: float
    height: float
    xlim: tuple[float, float]
    ylim: tuple[float, float]

    def x(self, value: float) -> float:
        lo, hi = self.xlim
        return self.left + (value - lo) / (hi - lo) * self.width

    def y(self, value: float) -> float:
        lo, hi = self.ylim
        return self.top + self.height - (value - lo) / (hi - lo) * self.height

    def frame(self, xlabel: str, ylabel: str, xticks: Sequence[float], yticks: Sequence[float],
              xtick_labels: Sequence[str] | None = None) -> list[str]:
        bottom = self.top + self.height
        out = [line(self.left, bottom, self.left + self.width, bottom),
               line(self.left, self.top, self.left, bottom)]
        labels = xtick_labels or [f"{t:g}" for t in xticks]
        for tick, label in zip(xticks, labels):
            out += [line(self.x(tick), bottom, self.x(tick), bottom + 4),
                    text(self.x(tick), bottom + 15, label, "middle")]
        for tick in yticks:
            out += [line(self.left - 4, self.y(tick), self.left, self.y(tick)),
                    text(self.left - 6, self.y(tick) + 4, f"{tick:g}", "end")]
        out += [text(self.left + self.width / 2, bottom + 30, xlabel, "middle"),
                text(self.left - 38, self.top + self.height / 2, ylabel, "middle",
                     transform=f"rotate(-90 {self.left - 38:.1f} {self.top + self.height / 2:.1f})")]
        return out


def _limits(values: Sequence[float], pad: float = 0.05, floor: float = 0.1) -> tuple[float, float]:
    lo, hi = (min(values), max(values)) if values else (-floor, floor)
    lo, hi = min(lo, -floor), max(hi, floor)
    span = hi - lo
    return lo - pad * span, hi + pad * span


def _ticks(lo: float, hi: float, n: int = 5) -> list[float]:
    return [round(float(v), 2) for v in np.linspace(lo, hi, n)]


def empty_figure(title: str, message: str) -> str:
    """A placeholder that says why a figure has no data (never an empty plot)."""
    return svg_document(520, 60, [text(10, 35, message)], title)


def gap_vs_share(points: Sequence[dict]) -> str:
    """points: dicts with share, gap, low, high (envelope around 0), significant, label."""
    title = "Discrimination gap against top-pick share"
    if not points:
        return empty_figure(title, "No rule with a discrimination gap on a complete setting.")
    values = [p["gap"] for p in points] + [p["low"] for p in points] + [p["high"] for p in points]
    axes = Axes(70, 20, 420, 240, (0.0, 1.0), _limits(values))
    body = axes.frame("top-pick share", "gap (success)", _ticks(0, 1, 6), _ticks(*axes.ylim))
    body.append(line(axes.left, axes.y(0), axes.left + axes.width, axes.y(0), dash="3,3"))
    for p in points:
        x = axes.x(p["share"])
        body.append(rect(x - 3, axes.y(p["high"]), 6, axes.y(p["low"]) - axes.y(p["high"]),
                         PALETTE["envelope"], f"{p['label']}: shuffle envelope"))
        color = PALETTE["accent"] if p["significant"] else PALETTE["rule"]
        body.append(circle(x, axes.y(p["gap"]), 4, color,
                           f"{p['label']}: gap {p['gap']:+.3f}, share {p['share']:.2f}"))
    body.append(text(axes.left + 6, axes.top + 10, "red: outside the envelope; bars: 95% shuffle envelope"))
    return svg_document(520, 300, body, title)


def _panel(axes: Axes, rules: list[str], ks: list[int], series: dict, refs: dict | None,
           envelopes: dict | None, ylabel: str) -> list[str]:
    """One panel of the K figure: a point per (rule, K), a grey reference mark per K."""
    body = axes.frame("library size K", ylabel, list(range(len(ks))), _ticks(*axes.ylim),
                      [str(k) for k in ks])
    for n, rule in enumerate(rules):
        offset = (n - (len(rules) - 1) / 2) * 6
        for j, k in enumerate(ks):
            value = series.get((rule, k))
            if value is None:
                continue
            x = axes.x(j) + offset
            if envelopes and (rule, k) in envelopes:
                low, high = envelopes[(rule, k)]
                body.append(rect(x - 2, axes.y(high), 4, axes.y(low) - axes.y(high), PALETTE["envelope"]))
            body.append(circle(x, axes.y(value), 3.5, RULE_COLORS[n % len(RULE_COLORS)],
                               f"{rule}, K={k}: {value:+.3f}"))
    for j, k in enumerate(ks):
        if refs and refs.get(k) is not None:
            body.append(line(axes.x(j) - 22, axes.y(refs[k]), axes.x(j) + 22, axes.y(refs[k]),
                             PALETTE["oracle"], 2.5, "4,2"))
    return body


def k_panel(rules: list[str], ks: list[int], share: dict, oracle_share: dict, gap: dict,
            envelope: dict, advantage: dict, best_fixed_advantage: dict) -> str:
    """Three panels over K: share vs oracle (grey), gap with envelope, A vs best-fixed A (grey)."""
    title = "Stack Replay at K = 3, 10, 50"
    if not share:
        return empty_figure(title, "No Stack Replay setting of K = 3, 10 or 50 is complete yet.")
    xlim = (-0.6, len(ks) - 0.4)
    gaps = list(gap.values()) + [v for pair in envelope.values() for v in pair]
    advantages = [v for v in list(advantage.values()) + list(best_fixed_advantage.values()) if v is not None]
    body = []
    body += _panel(Axes(60, 20, 200, 200, xlim, (0.0, 1.0)), rules, ks, share, oracle_share,
                   None, "top-pick share")
    body += _panel(Axes(340, 20, 200, 200, xlim, _limits(gaps)), rules, ks, gap, None,
                   envelope, "gap")
    body += _panel(Axes(620, 20, 200, 200, xlim, _limits(advantages, floor=1.0)), rules, ks,
                   advantage, best_fixed_advantage, None, "advantage A")
    x = 60
    for n, rule in enumerate(rules):
        body += [circle(x, 282, 4, RULE_COLORS[n % len(RULE_COLORS)]), text(x + 8, 286, rule)]
        x += 16 + 7 * len(rule)
    body.append(text(60, 304, "grey marks: oracle's top-pick share (left), best-fixed's A (right)"))
    return svg_document(860, 315, body, title)


def own_base_vs_cross(own: Sequence[float], cross: Sequence[float], labels: Sequence[str]) -> str:
    """Scatter of own-base success (x) against mean cross-scene success (y)."""
    title = "Own-base success against cross-scene success"
    if not own:
        return empty_figure(title, "No own-base success is stored for a library with a complete setting.")
    axes = Axes(70, 20, 300, 240, (0.0, 1.05), (0.0, 1.05))
    body = axes.frame("own-base success", "mean cross-scene success", _ticks(0, 1, 6), _ticks(0, 1, 6))
    body.append(rect(axes.x(0.8), axes.y(0.45), axes.x(1.05) - axes.x(0.8),
                     axes.y(0.0) - axes.y(0.45), "#fde0dd", "reliable at home, weak elsewhere"))
    for x, y, label in zip(own, cross, labels):
        body.append(circle(axes.x(x), axes.y(y), 3.5, PALETTE["rule"],
                           f"{label}: own-base {x:.2f}, cross-scene {y:.2f}"))
    return svg_document(420, 300, body, title)
