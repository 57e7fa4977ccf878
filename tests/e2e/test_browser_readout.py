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

import pytest

from leaderboard.site.build import build_leaderboard
from tests.support.browser import WIDTHS, check_fits_and_axe, non_white_share, recording_page, serve_site
from tests.support.readout_site import SETTING, readout_infos, readout_submissions
from tests.support.site_data import make_data, make_entries, make_settings

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
    yield from serve_site(files, root)


@pytest.fixture
def page(browser, base_url):
    """A fresh page that records failed scripts, failed answers and every request it makes."""
    yield from recording_page(browser, base_url)


def row_ids(page) -> list[str]:
    return page.eval_on_selector_all("#readout-board tbody tr", "rows => rows.map(r => r.dataset.row)")


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("name", list(PAGES))
def test_readout_page_fits_the_screen_and_passes_axe(browser, base_url, name, width):
    """No sideways scrolling at the width, and no serious or critical axe-core violation."""
    check_fits_and_axe(browser, f"{base_url}/{PAGES[name]}", name, width)


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
