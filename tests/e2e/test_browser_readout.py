"""The readout leaderboard in a real browser: Debian's Chromium driven by Playwright.

The site is built by `build_leaderboard` with the committed banks' readout settings and
reference reports and two submissions whose served reports the real engine computed
(`tests.support.readout_site`), written to a directory and served by a plain static HTTP
server. The readout setting pages and report pages are opened at 1280 and 390 px: none may
scroll sideways, axe-core must find no serious or critical violation, nothing may be
fetched from elsewhere, no script may fail, and the plots must draw. Screenshots go to
`build/browser-screenshots/` (or $EXPAUDIT_SCREENSHOT_DIR).
"""

from __future__ import annotations

import io
import os
import sys
from pathlib import Path

import pytest
from PIL import Image

from leaderboard.site.build import build_leaderboard
from tests.support.paths import REPO_ROOT
from tests.support.readout_site import SETTING, readout_infos, readout_submissions
from tests.support.servers import ProcessServer, free_port, wait_for_port
from tests.support.site_data import make_data, make_entries, make_settings

AXE = REPO_ROOT / "tests" / "browser" / "node_modules" / "axe-core" / "axe.min.js"
SCREENSHOTS = Path(os.environ.get("EXPAUDIT_SCREENSHOT_DIR", REPO_ROOT / "build" / "browser-screenshots"))
WIDTHS = (1280, 390)
REFERENCE = f"reference.{SETTING}.policy-door-e000"
PAGES = {"readout-index": "index.html",
         "readout-setting-door": f"settings/{SETTING}.html",
         "readout-setting-stack": "settings/stack-readout-v1.html",
         "readout-report-submission": f"reports/sub-weak.{SETTING}.html",
         "readout-report-reference": f"reports/{REFERENCE}.html"}

pytestmark = [pytest.mark.timeout(180), pytest.mark.slow]


@pytest.fixture(scope="module")
def submissions():
    return readout_submissions()


@pytest.fixture(scope="module")
def infos():
    return readout_infos()


@pytest.fixture(scope="module")
def base_url(submissions, infos, tmp_path_factory):
    root = tmp_path_factory.mktemp("readout-site")
    files = build_leaderboard(make_entries(make_data()), make_settings(), readout_settings=infos,
                              readout_entries=submissions)
    for key, body in files.items():
        path = root / key
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(body)
    port = free_port()
    server = ProcessServer([sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1",
                            "--directory", str(root)], root.parent / f"{root.name}-http.log")
    server.start()
    try:
        wait_for_port(port, 15, server.proc, server.log)
        yield f"http://127.0.0.1:{port}"
    finally:
        server.stop()


@pytest.fixture
def page(browser, base_url):
    """A fresh page that records failed scripts, failed answers and every request it makes."""
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    page.errors, page.requests = [], []
    page.on("pageerror", lambda error: page.errors.append(str(error)))
    page.on("console", lambda msg: page.errors.append(msg.text)
            if msg.type == "error" and not msg.text.startswith("Failed to load resource") else None)
    page.on("response", lambda response: page.errors.append(f"{response.status} {response.url}")
            if response.status >= 400 and not response.url.endswith("/favicon.ico") else None)
    page.on("request", lambda request: page.requests.append(request.url))
    yield page
    assert page.errors == []
    assert all(url.startswith(base_url) for url in page.requests), page.requests
    context.close()


def non_white_share(png: bytes) -> float:
    image = Image.open(io.BytesIO(png)).convert("L")
    histogram = image.histogram()
    return 1.0 - sum(histogram[245:]) / (image.width * image.height)


def row_ids(page) -> list[str]:
    return page.eval_on_selector_all("#readout-board tbody tr", "rows => rows.map(r => r.dataset.row)")


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("name", list(PAGES))
def test_readout_page_fits_the_screen_and_passes_axe(browser, base_url, name, width):
    """No sideways scrolling at the width, and no serious or critical axe-core violation."""
    assert AXE.is_file(), "axe-core is missing: scripts/bootstrap.sh dev (npm ci in tests/browser)"
    context = browser.new_context(viewport={"width": width, "height": 900})
    try:
        page = context.new_page()
        page.goto(f"{base_url}/{PAGES[name]}")
        overflow = page.evaluate(
            "() => [document.documentElement.scrollWidth, "
            "[...document.querySelectorAll('body *')].filter(e => e.getBoundingClientRect().right"
            " > window.innerWidth + 1 && !e.closest('.plot'))"  # a plot scrolls in its own box
            ".map(e => e.tagName + '#' + e.id + '.' + e.className).slice(0, 5)]")
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        shot = SCREENSHOTS / f"{name}-{width}.png"
        shot.write_bytes(page.screenshot(full_page=True))
        print(f"screenshot {name} at {width} px: {shot}")
        assert overflow[0] <= width and overflow[1] == [], overflow
        page.add_script_tag(path=str(AXE))
        result = page.evaluate("async () => await axe.run(document, {resultTypes: ['violations']})")
        assert len(result["passes"]) > 10  # axe ran its rules on this page
        serious = [(v["id"], v["impact"], [n["target"] for n in v["nodes"]][:3])
                   for v in result["violations"] if v["impact"] in ("serious", "critical")]
        assert serious == [], serious
    finally:
        context.close()


def test_setting_page_lists_submissions_ranked_then_the_reference_rows(page, base_url, submissions, infos):
    page.goto(f"{base_url}/settings/{SETTING}.html")
    door = next(i for i in infos if i.setting_id == SETTING)
    references = [f"reference.{SETTING}.{rep['name'].replace('/', '-').replace('_', '-')}"
                  for rep in door.reference["representations"]]
    ranked = sorted(submissions, key=lambda e: e.summary["mae_controlled"]["mean"])
    assert row_ids(page) == [e.row_id for e in ranked] + references
    ranks = page.locator("#readout-board tbody td[data-key='rank']").all_inner_texts()
    assert ranks[:len(ranked)] == ["1", "2"] and set(ranks[len(ranked):]) == {"reference"}
    weak = page.locator(f'#readout-board tr[data-row="sub-weak.{SETTING}"]')
    mae = weak.locator("td[data-key='mae_controlled']")
    block = submissions[0].summary["mae_controlled"]
    assert mae.inner_text().split()[0] == f"{block['mean']:.3f}"
    assert mae.get_attribute("title") == f"95% interval [{block['low']:.3f}, {block['high']:.3f}]"
    assert "weak features <i>" in weak.inner_text()  # escaped, shown as text


def test_clicking_a_header_sorts_the_rows(page, base_url):
    page.goto(f"{base_url}/settings/{SETTING}.html")
    before = row_ids(page)
    header = page.locator('#readout-board th[data-key="gain"]')
    header.click()
    assert header.get_attribute("aria-sort") == "descending"
    values = page.eval_on_selector_all('#readout-board tbody td[data-key="gain"]',
                                       "cells => cells.map(c => parseFloat(c.dataset.sort))")
    assert values == sorted(values, reverse=True)
    assert sorted(row_ids(page)) == sorted(before) and row_ids(page) != before


def test_setting_page_plots_draw_every_row(page, base_url, submissions, infos):
    page.goto(f"{base_url}/settings/{SETTING}.html")
    door = next(i for i in infos if i.setting_id == SETTING)
    n_refs = len(door.reference["representations"])
    for figure in ("#figure-board svg", "#figure-ranking svg"):
        chart = page.locator(figure)
        assert chart.count() == 1
        assert non_white_share(chart.screenshot()) > 0.01
    board = page.locator("#figure-board svg")
    # one marker and one legend key per row: circles for submissions, squares for references
    assert board.locator("circle").count() == 2 * len(submissions)
    assert board.locator("rect").count() == 2 * n_refs
    ranking = page.locator("#figure-ranking svg")
    assert ranking.locator("circle").count() == len(submissions) and ranking.locator("rect").count() == n_refs


@pytest.mark.parametrize("row", [f"sub-weak.{SETTING}", REFERENCE])
def test_index_to_setting_to_report_and_back(page, base_url, row):
    page.goto(f"{base_url}/index.html")
    page.locator(f'#readout-settings a[href="settings/{SETTING}.html"]').click()
    page.wait_for_url(f"{base_url}/settings/{SETTING}.html")
    assert page.locator("h1").inner_text() == SETTING
    page.locator(f'#readout-board tr[data-row="{row}"] td.name a').click()
    page.wait_for_url(f"{base_url}/reports/{row}.html")
    chart = page.locator("#figure-board svg")
    assert non_white_share(chart.screenshot()) > 0.01
    assert chart.locator("circle").count() == 2  # this row and its legend key
    assert page.locator("#readout-summary tbody tr").count() == 6
    assert page.locator("#readout-tests tbody tr").count() == 2
    assert "NaN" not in page.content()
    page.locator(f'nav a[href="../settings/{SETTING}.html"]').click()
    page.wait_for_url(f"{base_url}/settings/{SETTING}.html")
