"""The published leaderboard in a real browser: Debian's Chromium driven by Playwright.

The site is built by `build_leaderboard` from real audits, written to a
directory and served by a plain static HTTP server, exactly as a static
server or object store would serve it. Nothing may be fetched from anywhere
else, no script may fail, and the report plots must draw. Index, setting and
report pages are opened at 1280 and 390 px: none may scroll sideways, and
axe-core (from npm, `tests/browser/package.json`, injected into the page)
must find no serious or critical violation. Screenshots of each go to
`build/browser-screenshots/` (or $EXPAUDIT_SCREENSHOT_DIR) and their paths
are printed.
"""

from __future__ import annotations

import io
import os
import sys
from pathlib import Path

import pytest
from PIL import Image

from leaderboard.site.build import build_leaderboard
from tests.support.browser import WIDTHS, check_fits_and_axe, non_white_share, recording_page, serve_site
from tests.support.servers import ProcessServer, RedisServer, free_port, wait_for_port
from tests.support.site_data import HINDSIGHT, SETTING, make_data, make_entries, make_settings

HEADERS = ["rank", "name", "A [95% interval]", "beats best-fixed", "gap vs shuffle", "success",
           "top pick / oracle", "within-query AUROC", "verdict"]

pytestmark = [pytest.mark.timeout(180), pytest.mark.slow]


@pytest.fixture(scope="module")
def entries():
    return make_entries(make_data())


def thumbnail_png() -> bytes:
    """A 128x128 scene-like picture (the size of the benchmark's query images)."""
    image = Image.new("RGB", (128, 128), (235, 230, 220))
    image.paste((200, 40, 40), (40, 60, 60, 80))
    image.paste((40, 160, 60), (70, 62, 88, 80))
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return buffer.getvalue()


@pytest.fixture(scope="module")
def base_url(entries, tmp_path_factory):
    root = tmp_path_factory.mktemp("site")
    files = build_leaderboard(entries, make_settings(), thumbnails={SETTING: thumbnail_png()})
    yield from serve_site(files, root)


@pytest.fixture
def page(browser, base_url):
    """A fresh page that records failed scripts, failed answers and every request it makes."""
    yield from recording_page(browser, base_url)


def column_values(page, key: str) -> list[str]:
    return page.eval_on_selector_all(
        f'#leaderboard tbody td[data-key="{key}"]', "cells => cells.map(c => c.dataset.sort)")


def row_ids(page) -> list[str]:
    return page.eval_on_selector_all("#leaderboard tbody tr",
                                     "rows => rows.map(r => r.dataset.submission)")


def test_setting_page_shows_every_ranked_row_with_its_verdict(page, base_url, entries):
    page.goto(f"{base_url}/settings/{SETTING}.html")
    ranked = [e for e in entries if e.submission_id not in HINDSIGHT]
    rows = page.locator("#leaderboard tbody tr")
    assert rows.count() == len(ranked)
    assert sorted(row_ids(page)) == sorted(e.submission_id for e in ranked)
    for entry in ranked:
        row = page.locator(f'#leaderboard tr[data-submission="{entry.submission_id}"]')
        assert row.is_visible()
        verdict = row.locator("td.verdict")
        assert verdict.inner_text() == entry.report["verdict"]["label"]  # one line a row, not ten
        verdict.locator("summary").click()
        assert verdict.inner_text() == f"{entry.report['verdict']['label']}\n{entry.report['verdict']['text']}"
    headers = page.locator("#leaderboard thead th").all_inner_texts()
    assert headers == HEADERS
    lines = page.locator("#reference-lines li").all_inner_texts()
    assert [line.split(":")[0] for line in lines] == ["random (A = 0)", "best-fixed", "oracle (A = 1)"]


def _sorted_numeric(values: list[str], descending: bool) -> bool:
    """Numbers in order, then every blank (not available) cell."""
    numbers = [float(v) for v in values if v != ""]
    head = values[:len(numbers)]
    return "" not in head and numbers == sorted(numbers, reverse=descending)


@pytest.mark.parametrize("key", ["main", "gap", "within_auroc", "top_pick"])
def test_clicking_a_header_sorts_the_rows(page, base_url, key):
    page.goto(f"{base_url}/settings/{SETTING}.html")
    before = row_ids(page)
    header = page.locator(f'#leaderboard th[data-key="{key}"]')
    header.click()
    assert header.get_attribute("aria-sort") == "descending"
    descending = column_values(page, key)
    assert _sorted_numeric(descending, descending=True), descending
    header.click()
    assert header.get_attribute("aria-sort") == "ascending"
    ascending = column_values(page, key)
    assert _sorted_numeric(ascending, descending=False), ascending
    assert sorted(row_ids(page)) == sorted(before)


def test_sorting_by_a_column_changes_the_row_order(page, base_url):
    page.goto(f"{base_url}/settings/{SETTING}.html")
    before = row_ids(page)  # published order: A, descending
    header = page.locator('#leaderboard th[data-key="main"]')
    header.click()
    assert row_ids(page) == before
    header.click()
    after = row_ids(page)
    assert after != before
    assert after[0] == "sub-anti" and after[-1] == before[0]


def test_hovering_a_number_shows_its_interval(page, base_url, entries):
    report = next(e for e in entries if e.submission_id == "sub-good").report
    interval = report["intervals"]["success_rule"]
    page.goto(f"{base_url}/settings/{SETTING}.html")
    target = page.locator('#leaderboard tr[data-submission="sub-good"] td[data-key="success"]')
    target.hover()
    box = target.bounding_box()
    hovered_title = page.evaluate(
        "([x, y]) => document.elementFromPoint(x, y).closest('td').title",
        [box["x"] + box["width"] / 2, box["y"] + box["height"] / 2])
    assert hovered_title == f"95% interval [{interval['low']:.3f}, {interval['high']:.3f}]"
    na = page.locator('#leaderboard tr[data-submission="sub-pick"] td[data-key="within_auroc"]')
    assert na.inner_text() == "n/a" and na.get_attribute("title").startswith("n/a: selection-only")


@pytest.mark.parametrize("submission_id", ["sub-good", "sub-pick", "baseline-random-" + SETTING])
def test_report_page_plots_render(page, base_url, submission_id):
    page.goto(f"{base_url}/settings/{SETTING}.html")
    if submission_id.startswith("baseline-random"):
        page.locator('#reference-lines li[data-rule="random"] a').click()
    else:
        page.locator(f'#leaderboard tr[data-submission="{submission_id}"] a').click()
    page.wait_for_url(f"{base_url}/reports/{submission_id}.html")
    charts = page.locator("svg")
    assert charts.count() >= 3
    for i in range(charts.count()):
        chart = charts.nth(i)
        box = chart.bounding_box()
        assert box["width"] > 100 and box["height"] > 40
        shapes = chart.evaluate(
            "svg => [...svg.querySelectorAll('rect, circle, line')]"
            ".filter(e => { const b = e.getBBox(); return b.width > 0 || b.height > 0; }).length")
        assert shapes > 0
        assert non_white_share(chart.screenshot()) > 0.01
    assert "NaN" not in page.content()
    page.locator(f'nav a[href="../settings/{SETTING}.html"]').click()
    page.wait_for_url(f"{base_url}/settings/{SETTING}.html")


def test_report_bars_are_drawn_to_scale(page, base_url, entries):
    """The histogram's tallest bar belongs to the rule's top pick."""
    report = next(e for e in entries if e.submission_id == "sub-pick").report
    page.goto(f"{base_url}/reports/sub-pick.html")
    chart = page.locator('svg[aria-label="Selection counts of the rule against the oracle"]')
    heights = chart.evaluate(
        "svg => [...svg.querySelectorAll('rect')].map(r => [r.getBBox().height,"
        " (r.querySelector('title') || {}).textContent || ''])")
    tallest = max(heights, key=lambda pair: pair[0])
    assert tallest[1].startswith(report["concentration"]["top_pick"] + " rule")


def test_setting_page_plots_draw(page, base_url):
    page.goto(f"{base_url}/settings/{SETTING}.html")
    for figure in ("#figure-ranking svg", "#figure-selection svg"):
        chart = page.locator(figure)
        assert chart.count() == 1
        assert non_white_share(chart.screenshot()) > 0.01
    dots = page.locator("#figure-ranking svg circle").count()
    assert dots == page.locator("#leaderboard tbody tr").count()


PAGES = {"index": "index.html", "setting": f"settings/{SETTING}.html",
         "report": "reports/sub-good.html"}


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("name", list(PAGES))
def test_page_fits_the_screen_and_passes_axe(browser, base_url, name, width):
    """No sideways scrolling at the width, and no serious or critical axe-core violation."""
    check_fits_and_axe(browser, f"{base_url}/{PAGES[name]}", name, width)


def test_index_links_lead_to_the_setting_page(page, base_url):
    page.goto(f"{base_url}/index.html")
    thumb = page.locator(f'#settings img[src="thumbs/{SETTING}.png"]')
    assert thumb.evaluate("img => img.complete && img.naturalWidth") == 128
    page.locator(f'#settings a[href="settings/{SETTING}.html"]').click()
    page.wait_for_url(f"{base_url}/settings/{SETTING}.html")
    assert page.locator("h1").inner_text() == SETTING
    page.locator("text=all settings").click()
    page.wait_for_url(f"{base_url}/index.html")
    shot = page.screenshot(full_page=True)
    assert non_white_share(shot) > 0.005


def test_pages_work_through_the_service_static_route(browser, entries, tmp_path):
    """The same files published into the store and served by the service under gunicorn."""
    from service.submissions.publishing import LEADERBOARD_PREFIX
    from service.store.storage import LocalStore

    store = LocalStore(tmp_path / "store")
    for key, body in build_leaderboard(entries, make_settings()).items():
        store.put_bytes(LEADERBOARD_PREFIX + key, body)
    redis = RedisServer(tmp_path / "redis").start()
    port = free_port()
    env = {"PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}", "HOME": str(tmp_path),
           "EXPAUDIT_STORE": str(tmp_path / "store"), "EXPAUDIT_REDIS_URL": redis.url}
    web = ProcessServer([sys.executable, "-m", "gunicorn", "--workers", "1", "--bind",
                         f"127.0.0.1:{port}", "service.web.app:create_app()"], tmp_path / "web.log",
                        env=env)
    context = browser.new_context()
    try:
        web.start()
        wait_for_port(port, 60, web.proc, web.log)
        page = context.new_page()
        response = page.goto(f"http://127.0.0.1:{port}/")
        assert response.ok and page.url.endswith("/leaderboard/index.html")
        page.locator(f'#settings a[href="settings/{SETTING}.html"]').click()
        assert page.locator("#leaderboard tbody tr").count() == len(entries) - len(HINDSIGHT)
        page.locator('#leaderboard th[data-key="main"]').click()
        assert _sorted_numeric(column_values(page, "main"), descending=True)
        page.locator('#leaderboard tr[data-submission="sub-good"] a').click()
        page.wait_for_url("**/leaderboard/reports/sub-good.html")
        assert non_white_share(page.locator("svg").first.screenshot()) > 0.01
        assert page.title() == "noisy oracle <b> on stack-replay-k10-a · expaudit"
    finally:
        context.close()
        web.stop()
        redis.stop()


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("name", list(PAGES))
def test_every_plot_label_lies_inside_its_plot(browser, base_url, name, width):
    """No text of a plot is cut by its edges: each `svg text`'s box lies inside its svg's, at
    1280 px and on a 390 px phone (where a plot keeps its labels 10 px tall and scrolls)."""
    context = browser.new_context(viewport={"width": width, "height": 900})
    try:
        page = context.new_page()
        page.goto(f"{base_url}/{PAGES[name]}")
        outside = page.evaluate(
            "() => [...document.querySelectorAll('svg text')].filter(t => t.getBBox().width > 0)"
            ".map(t => { const b = t.getBoundingClientRect(),"
            " s = t.ownerSVGElement.getBoundingClientRect();"
            " return [t.textContent.slice(0, 60), Math.round(b.left - s.left),"
            " Math.round(s.right - b.right), Math.round(b.top - s.top),"
            " Math.round(s.bottom - b.bottom)]; })"
            ".filter(([, l, r, t, d]) => Math.min(l, r, t, d) < -1)")
        drawn = page.locator("svg text").count()
        assert drawn > 0, "no plot text on the page"
        assert outside == [], f"{name} at {width} px: labels past their plot's edge " \
                              f"(text, room left, right, top, bottom): {outside[:5]}"
    finally:
        context.close()
