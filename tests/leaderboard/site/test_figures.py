"""The leaderboard's figures size their margins to their text: rule and setting names are
drawn whole where the figure has room, a name too long for any room is cut with its full
form in a tooltip, and the width reckoning holds for the font browsers draw with."""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest

from leaderboard.rules.baselines import DISPLAY_NAMES
from leaderboard.site.figures import (GridCell, IntervalRow, Marker, interval_figure,
                                      selection_figure, summary_figure)
from leaderboard.site.svg import GLYPH_EM, text_width

NAMES = sorted(DISPLAY_NAMES.values(), key=len, reverse=True)[:6]
"""The longest names of the reference rules (what was cut: "track record (Laplace-smoot...")."""


def _texts(svg: str) -> list[str]:
    return re.findall(r"<text [^>]*>([^<]*)</text>", svg)


def _width(svg: str) -> float:
    return float(re.search(r'<svg [^>]*width="(\d+)"', svg).group(1))


def test_the_ranking_draws_every_name_whole_and_names_only_the_quantity():
    rows = [IntervalRow(name, 0.1 * i, 0.1 * i - 0.05, 0.1 * i + 0.05) for i, name in
            enumerate(NAMES)]
    markers = [Marker("random", "random", 0.0), Marker("oracle", "oracle", 1.0)]
    svg = interval_figure(rows, markers, "ranking", "A")
    drawn = _texts(svg)
    assert set(NAMES) <= set(drawn), set(NAMES) - set(drawn)
    assert "A" in drawn and not any("dashed" in t for t in drawn)


def test_a_name_longer_than_any_room_is_cut_with_its_full_form_as_tooltip():
    name = "a rule with a name far longer than any figure gives a label, " * 3
    svg = interval_figure([IntervalRow(name, 0.5, 0.4, 0.6)], [], "ranking", "A")
    (cut,) = [t for t in _texts(svg) if t.startswith("a rule")]
    assert cut.endswith("\u2026") and len(cut) < len(name)
    assert f"<title>{name}</title>" in svg


def test_the_summary_holds_its_longest_setting_name_and_rule_names():
    settings = ["stack-replay-k10-a"]
    cells = {(name, settings[0]): GridCell(0.3, 0.2, 0.4, 0.25) for name in NAMES}
    svg = summary_figure(NAMES, settings, cells, "summary")
    assert set(NAMES + settings) <= set(_texts(svg))
    # the slanted header ends inside the figure: its start plus its run at 35 degrees
    start = float(re.search(r'<text x="([\d.]+)"[^>]*rotate\(-35', svg).group(1))
    assert start + text_width(settings[0], 11) * 0.8192 <= _width(svg)


def test_the_selection_legend_keeps_whole_names():
    series = [(name, [0.5, 0.5]) for name in NAMES[:4]]
    svg = selection_figure(["stack-e000", "stack-e001"], series, [0.5, 0.5], "selection")
    assert {name for name, _ in series} <= set(_texts(svg))


def test_the_width_table_is_the_font_browsers_draw_with():
    font = subprocess.run(["fc-match", "-f", "%{file}", "sans-serif"], capture_output=True,
                          text=True).stdout if shutil.which("fc-match") else ""
    if "DejaVuSans.ttf" not in font:
        pytest.skip("DejaVu Sans is not the sans-serif here")
    from PIL import ImageFont

    measured = ImageFont.truetype(font, 1000)
    for character, em in GLYPH_EM.items():
        assert measured.getlength(character) / 1000 == pytest.approx(em, abs=0.001), character
