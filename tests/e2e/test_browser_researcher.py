"""A researcher with only the public address: everything reached by following the site's links.

The service runs under gunicorn on the benchmark's own frozen data; its site is published the
way the publisher does it (`setting_infos`, `read_documents`, the thumbnails) from the small
synthetic leaderboard of the site's tests. Debian's Chromium (Playwright) opens the server's
root on a 390 px phone and, clicking only links on the pages, reaches the submit instructions
(naming this server's own address), the paper on arXiv (answered by a stand-in: nothing
leaves the machine), the docs, the API reference, the dataset card with its Croissant
record, and a setting's downloads, each saved under its setting's name and describing itself.
Screenshots at 390 px of the index, a setting page and a report page go to
`build/browser-screenshots/` (or $EXPAUDIT_SCREENSHOT_DIR); on each, every plot label is at
least `MIN_LABEL_PX` tall on screen.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from benchmark_data.downloads import METADATA_PREFIX, parquet_description
from leaderboard.site.build import build_leaderboard
from leaderboard.site.documents import read_documents
from tests.support.paths import REPO_ROOT
from tests.support.servers import ProcessServer, RedisServer, free_port, wait_for_port
from tests.support.site_data import SETTING, make_data, make_entries

SCREENSHOTS = Path(os.environ.get("EXPAUDIT_SCREENSHOT_DIR", REPO_ROOT / "build" / "browser-screenshots"))
PHONE = {"width": 390, "height": 844}
MIN_LABEL_PX = 10.0
"""The smallest a plot's text may render on the phone (issue 35: labels at 3.4 and 6-7 px)."""
PAPER = "https://arxiv.org/abs/2609.26567"

pytestmark = [pytest.mark.timeout(300), pytest.mark.slow]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """The service on the benchmark's data with its site published; yields its address."""
    from service.catalog.catalog import BenchmarkCatalog
    from service.store.storage import LocalStore
    from service.submissions import setting_infos, setting_thumbnails, write_site

    root = tmp_path_factory.mktemp("researcher")
    catalog = BenchmarkCatalog()
    write_site(LocalStore(root / "store"),
               build_leaderboard(make_entries(make_data()), setting_infos(catalog),
                                 thumbnails=setting_thumbnails(catalog),
                                 documents=read_documents()))
    redis = RedisServer(root / "redis").start()
    port = free_port()
    env = {"PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}", "HOME": str(root),
           "EXPAUDIT_STORE": str(root / "store"), "EXPAUDIT_REDIS_URL": redis.url}
    web = ProcessServer([sys.executable, "-m", "gunicorn", "--workers", "1", "--bind",
                         f"127.0.0.1:{port}", "service.web.app:create_app()"], root / "web.log",
                        env=env)
    web.start()
    try:
        wait_for_port(port, 60, web.proc, web.log)
        yield f"http://127.0.0.1:{port}"
    finally:
        web.stop()
        redis.stop()


@pytest.fixture
def phone(browser, server):
    """A 390 px page that records every request; arXiv answers with a stand-in page."""
    context = browser.new_context(viewport=PHONE, accept_downloads=True)
    context.route("https://arxiv.org/**", lambda route: route.fulfill(
        status=200, content_type="text/html", body="<title>arXiv stand-in</title><h1>paper</h1>"))
    page = context.new_page()
    page.requests = []
    page.on("request", lambda request: page.requests.append(request.url))
    yield page
    strays = [u for u in page.requests if not u.startswith((server, "https://arxiv.org/", "data:"))]
    assert strays == []
    context.close()


def click(page, selector: str, url_glob: str | None = None) -> None:
    page.locator(selector).first.click()
    if url_glob:
        page.wait_for_url(url_glob)


def label_sizes(page) -> list[tuple[float, str]]:
    """On-screen height (CSS px) of every drawn text of every plot on the page."""
    return page.evaluate(
        "() => [...document.querySelectorAll('svg text')].filter(t => t.getBBox().width > 0)"
        ".map(t => { const m = t.getScreenCTM();"
        " return [parseFloat(getComputedStyle(t).fontSize) * Math.hypot(m.a, m.b),"
        " t.textContent.slice(0, 40)]; })")


def shoot(page, name: str) -> None:
    """A full-page screenshot at 390 px, and every plot label at least MIN_LABEL_PX."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    shot = SCREENSHOTS / f"researcher-{name}-390.png"
    shot.write_bytes(page.screenshot(full_page=True))
    print(f"screenshot {name} at 390 px: {shot}")
    sizes = label_sizes(page)
    small = sorted(s for s in sizes if s[0] < MIN_LABEL_PX)
    assert small == [], f"{name}: {len(small)} of {len(sizes)} plot labels under " \
                        f"{MIN_LABEL_PX} px, smallest {small[:3]}"


def test_submit_instructions_are_one_tap_from_the_top_and_name_this_server(phone, server):
    phone.goto(server + "/")
    phone.wait_for_url("**/leaderboard/index.html")
    click(phone, 'nav[aria-label="sections"] a[href="#submit"]')
    heading = phone.locator("h2#submit")
    box = heading.bounding_box()
    assert 0 <= box["y"] < PHONE["height"], box  # in view after one tap
    command = phone.locator("#submit ~ pre code").first.inner_text()
    assert f"export EXPAUDIT_SERVER={server} " in command, command
    assert "this-server" not in phone.content()


def test_the_paper_docs_and_api_reference_are_linked(phone, server):
    phone.goto(server + "/")
    click(phone, f'#papers a[href="{PAPER}"]', PAPER)
    assert phone.title() == "arXiv stand-in"
    phone.go_back()
    click(phone, 'nav[aria-label="sections"] a:text("documents")', "**/leaderboard/docs/index.html")
    documents = phone.locator("#documents a")
    assert documents.count() >= 15
    for href in documents.evaluate_all("links => links.map(a => a.href)"):
        assert phone.request.get(href).ok, href
    click(phone, '#documents a:text("Audit metrics")', "**/leaderboard/docs/metrics.html")
    assert phone.locator("h1").first.inner_text() == "Audit metrics"
    click(phone, 'nav a:text("leaderboard")', "**/leaderboard/index.html")
    click(phone, 'nav[aria-label="sections"] a:text("API reference")', "**/api/v1/docs")
    assert "/api/v1/settings/{setting_id}" in phone.content()


def test_the_dataset_card_and_its_croissant_record(phone, server):
    phone.goto(server + "/")
    click(phone, 'nav[aria-label="sections"] a:text("dataset card")',
          "**/leaderboard/dataset/index.html")
    assert phone.locator("h1").first.inner_text().startswith("Dataset card")
    assert "mlcroissant[parquet]" in phone.locator("article").inner_text()
    href = phone.locator('article a[href="croissant.json"]').first.evaluate("a => a.href")
    record = phone.request.get(href)
    assert record.ok and json.loads(record.body())["conformsTo"] == \
        "http://mlcommons.org/croissant/1.0"


def test_a_settings_downloads_describe_themselves(phone, server):
    phone.goto(server + "/")
    click(phone, f'#settings a[href="settings/{SETTING}.html"]', f"**/settings/{SETTING}.html")
    click(phone, 'nav a[href="#downloads"]')
    items = phone.locator("#download-list li")
    assert items.count() == 8  # a Stack setting: tables, archives and its /input tree
    links = phone.locator("#download-list a")
    for i in range(links.count()):
        link = links.nth(i)
        name = link.get_attribute("download")
        assert name.startswith(SETTING + "-"), name
        response = phone.request.get(link.evaluate("a => a.href"))
        assert response.ok, name
        if name.endswith(".parquet"):
            fields = parquet_description(response.body())
            assert fields[METADATA_PREFIX + "setting_id"] == SETTING
            assert fields[METADATA_PREFIX + "license"] == "MIT"
    with phone.expect_download() as saved:
        click(phone, '#download-list li[data-download="outcomes"] a:text("parquet")')
    assert saved.value.suggested_filename == f"{SETTING}-outcomes.parquet"
    description = parquet_description(Path(saved.value.path()).read_bytes())
    assert description[METADATA_PREFIX + "data_version"]


def test_phone_screenshots_with_readable_plot_labels(phone, server):
    phone.goto(server + "/")
    shoot(phone, "index")
    click(phone, f'#settings a[href="settings/{SETTING}.html"]', f"**/settings/{SETTING}.html")
    shoot(phone, "setting")
    click(phone, '#leaderboard tr[data-submission="sub-good"] a', "**/reports/sub-good.html")
    shoot(phone, "report")
