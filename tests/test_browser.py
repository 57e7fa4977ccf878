"""The published leaderboard in a real browser: Debian's Chromium driven by Playwright.

The site is built by `build_leaderboard` from real audits, written to a
directory and served by a plain static HTTP server, exactly as a static
server or object store would serve it. Nothing may be fetched from anywhere
else, no script may fail, and the report plots must draw.
"""

from __future__ import annotations

import io
import os
import sys
from pathlib import Path

import pytest
from PIL import Image

from leaderboard.publish import COLUMNS, build_leaderboard
from tests.servers import ProcessServer, RedisServer, free_port, wait_for_port
from tests.test_publish import SETTING, make_data, make_entries, make_settings

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]
pytestmark = [pytest.mark.timeout(180), pytest.mark.slow]


@pytest.fixture(scope="module")
def entries():
    return make_entries(make_data())


@pytest.fixture(scope="module")
def base_url(entries, tmp_path_factory):
    root = tmp_path_factory.mktemp("site")
    for key, body in build_leaderboard(entries, make_settings()).items():
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


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    assert Path(CHROMIUM).exists(), "Debian chromium is missing: apt-get install -y chromium"
    with sync_playwright() as playwright:
        instance = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield instance
        finally:
            instance.close()


@pytest.fixture
def page(browser, base_url):
    """A fresh page that records failed scripts and every request it makes."""
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    page.errors = []
    page.requests = []
    page.on("pageerror", lambda error: page.errors.append(str(error)))
    page.on("console", lambda msg: page.errors.append(msg.text)
            if msg.type == "error" and not msg.text.startswith("Failed to load resource") else None)
    # the browser's own favicon probe is not the page's doing; every other miss is
    page.on("response", lambda response: page.errors.append(f"{response.status} {response.url}")
            if response.status >= 400 and not response.url.endswith("/favicon.ico") else None)
    page.on("request", lambda request: page.requests.append(request.url))
    yield page
    assert page.errors == []
    assert all(url.startswith(base_url) for url in page.requests), page.requests
    context.close()


def column_values(page, key: str) -> list[str]:
    return page.eval_on_selector_all(
        f'#leaderboard tbody td[data-key="{key}"]', "cells => cells.map(c => c.dataset.sort)")


def row_ids(page) -> list[str]:
    return page.eval_on_selector_all("#leaderboard tbody tr",
                                     "rows => rows.map(r => r.dataset.submission)")


def test_setting_page_shows_every_row_with_its_verdict(page, base_url, entries):
    page.goto(f"{base_url}/settings/{SETTING}.html")
    rows = page.locator("#leaderboard tbody tr")
    assert rows.count() == len(entries)
    assert sorted(row_ids(page)) == sorted(e.submission_id for e in entries)
    for entry in entries:
        row = page.locator(f'#leaderboard tr[data-submission="{entry.submission_id}"]')
        assert row.is_visible()
        assert row.locator("td.verdict").inner_text() == \
            f"{entry.report['verdict']['label']}: {entry.report['verdict']['text']}"
    headers = page.locator("#leaderboard thead th").all_inner_texts()
    assert headers == ["name", *[c.header for c in COLUMNS], "verdict"]


def _sorted_numeric(values: list[str], descending: bool) -> bool:
    """Numbers in order, then every blank (not available) cell."""
    numbers = [float(v) for v in values if v != ""]
    head = values[:len(numbers)]
    return "" not in head and numbers == sorted(numbers, reverse=descending)


@pytest.mark.parametrize("key", ["advantage", "gap", "within_auroc", "top_pick"])
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
    before = row_ids(page)  # published order: success, descending
    header = page.locator('#leaderboard th[data-key="success"]')
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


def non_white_share(png: bytes) -> float:
    """Share of pixels that are not (near) white in a screenshot."""
    image = Image.open(io.BytesIO(png)).convert("L")
    histogram = image.histogram()
    return 1.0 - sum(histogram[245:]) / (image.width * image.height)


@pytest.mark.parametrize("submission_id", ["sub-good", "sub-pick", "baseline-random-" + SETTING])
def test_report_page_plots_render(page, base_url, submission_id):
    page.goto(f"{base_url}/settings/{SETTING}.html")
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


def test_report_bars_are_drawn_to_scale(page, base_url, entries):
    """The histogram's tallest bar belongs to the rule's top pick."""
    report = next(e for e in entries if e.submission_id == "sub-pick").report
    page.goto(f"{base_url}/reports/sub-pick.html")
    heights = page.locator("svg").first.evaluate(
        "svg => [...svg.querySelectorAll('rect')].map(r => [r.getBBox().height,"
        " (r.querySelector('title') || {}).textContent || ''])")
    tallest = max(heights, key=lambda pair: pair[0])
    assert tallest[1].startswith(report["concentration"]["top_pick"] + " rule")


def test_index_links_lead_to_the_setting_page(page, base_url):
    page.goto(f"{base_url}/index.html")
    page.locator(f'#settings a[href="settings/{SETTING}.html"]').click()
    page.wait_for_url(f"{base_url}/settings/{SETTING}.html")
    assert page.locator("h1").inner_text() == SETTING
    page.locator("text=all settings").click()
    page.wait_for_url(f"{base_url}/index.html")
    shot = page.screenshot(full_page=True)
    assert non_white_share(shot) > 0.005


def test_pages_work_through_the_service_static_route(browser, entries, tmp_path):
    """The same files published into the store and served by the service under gunicorn."""
    from service.publishing import LEADERBOARD_PREFIX
    from service.storage import LocalStore

    store = LocalStore(tmp_path / "store")
    for key, body in build_leaderboard(entries, make_settings()).items():
        store.put_bytes(LEADERBOARD_PREFIX + key, body)
    redis = RedisServer(tmp_path / "redis").start()
    port = free_port()
    env = {"PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}", "HOME": str(tmp_path),
           "EXPAUDIT_STORE": str(tmp_path / "store"), "EXPAUDIT_REDIS_URL": redis.url}
    web = ProcessServer([sys.executable, "-m", "gunicorn", "--workers", "1", "--bind",
                         f"127.0.0.1:{port}", "service.app:create_app()"], tmp_path / "web.log",
                        env=env)
    context = browser.new_context()
    try:
        web.start()
        wait_for_port(port, 60, web.proc, web.log)
        page = context.new_page()
        response = page.goto(f"http://127.0.0.1:{port}/")
        assert response.ok and page.url.endswith("/leaderboard/index.html")
        page.locator(f'#settings a[href="settings/{SETTING}.html"]').click()
        assert page.locator("#leaderboard tbody tr").count() == len(entries)
        page.locator('#leaderboard th[data-key="advantage"]').click()
        assert _sorted_numeric(column_values(page, "advantage"), descending=True)
        page.locator('#leaderboard tr[data-submission="sub-good"] a').click()
        page.wait_for_url("**/leaderboard/reports/sub-good.html")
        assert non_white_share(page.locator("svg").first.screenshot()) > 0.01
    finally:
        context.close()
        web.stop()
        redis.stop()
