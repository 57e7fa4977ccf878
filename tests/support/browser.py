"""Shared page checks for the browser tests: serve a built site, record a page's
failures, and check that a page fits the screen and passes axe-core.

One copy for the leaderboard and readout browser tests, so both hold pages to the
same bar.
"""

from __future__ import annotations

import io
import os
import sys
from collections.abc import Iterator
from pathlib import Path

from PIL import Image

from tests.support.paths import REPO_ROOT
from tests.support.servers import ProcessServer, free_port, wait_for_port

AXE = REPO_ROOT / "tests" / "browser" / "node_modules" / "axe-core" / "axe.min.js"
SCREENSHOTS = Path(os.environ.get("EXPAUDIT_SCREENSHOT_DIR", REPO_ROOT / "build" / "browser-screenshots"))
WIDTHS = (1280, 390)


def serve_site(files: dict[str, bytes], root: Path) -> Iterator[str]:
    """Write the built site's files under `root` and serve them over plain HTTP; yields the base URL."""
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


def recording_page(browser, base_url: str) -> Iterator:
    """A fresh page that records failed scripts, failed answers and every request it makes."""
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    page.errors, page.requests = [], []
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


def non_white_share(png: bytes) -> float:
    """Share of pixels that are not (near) white in a screenshot."""
    image = Image.open(io.BytesIO(png)).convert("L")
    histogram = image.histogram()
    return 1.0 - sum(histogram[245:]) / (image.width * image.height)


def check_fits_and_axe(browser, url: str, name: str, width: int) -> None:
    """No sideways scrolling at the width, and no serious or critical axe-core violation."""
    assert AXE.is_file(), "axe-core is missing: scripts/bootstrap.sh dev (npm ci in tests/browser)"
    context = browser.new_context(viewport={"width": width, "height": 900})
    try:
        page = context.new_page()
        page.goto(url)
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
