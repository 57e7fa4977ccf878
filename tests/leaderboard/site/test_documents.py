"""The project's documents in the published site: pages, links that lead somewhere, the index's
links, and the submit block's server address."""

from __future__ import annotations

import json
import posixpath
import re

import pytest

from leaderboard.errors import BrokenContract
from leaderboard.site.build import build_leaderboard
from leaderboard.site.documents import (CROISSANT, DATASET_CARD, Documents, read_documents,
                                        render_markdown, site_path, slug)
from tests.support.site_data import make_settings

DOCS = Documents(
    markdown={
        "docs/metrics.md": "# Audit metrics\n\n## Input files (`expaudit audit`)\n\n"
                           "See [the API](api.md#tokens), [the card](../benchmark_data/dataset/"
                           "README.md), [code](../leaderboard/audit.py), [web](https://example.org)"
                           " and `docs/api.md`; `README.md` stays text.\n",
        "docs/api.md": "# REST API\n\n## Tokens\n\n| a | b |\n|---|---|\n| 1 | 2 |\n",
        DATASET_CARD: "# Dataset card\n\n[`croissant.json`](croissant.json)\n",
        "README.md": "# expaudit\n\nRead [metrics](docs/metrics.md).\n",
    },
    files={CROISSANT: b'{"conformsTo": "http://mlcommons.org/croissant/1.0"}\n'})


def links(html: str) -> list[str]:
    return re.findall(r'<a href="([^"]*)"', html)


def test_site_paths_of_every_kind_of_document():
    assert site_path("docs/metrics.md") == "docs/metrics.html"
    assert site_path("README.md") == "docs/readme.html"
    assert site_path(DATASET_CARD) == "dataset/index.html"
    assert site_path(CROISSANT) == "dataset/croissant.json"
    with pytest.raises(BrokenContract, match="'src/x.py' has no place in the published site"):
        site_path("src/x.py")


def test_links_lead_to_published_pages_or_are_dropped():
    pages = {doc.source: doc for doc in render_markdown(DOCS)}
    metrics = pages["docs/metrics.md"]
    assert metrics.title == "Audit metrics"
    assert links(metrics.body_html) == ["api.html#tokens", "../dataset/index.html",
                                        "https://example.org", "api.html"]
    assert "</a>, code, <a" in metrics.body_html  # the link to a source file is gone, its text stays
    assert "<code>README.md</code> stays text" in metrics.body_html  # only docs/ paths link
    assert 'id="input-files-expaudit-audit"' in metrics.body_html
    assert links(pages["README.md"].body_html) == ["metrics.html"]
    assert links(pages[DATASET_CARD].body_html) == ["croissant.json"]
    assert 'class="doc-table"' in pages["docs/api.md"].body_html


def test_slug_is_githubs():
    assert slug("Input files (`expaudit audit`)") == "input-files-expaudit-audit"
    assert slug("Tokens (admin)") == "tokens-admin"


def test_the_site_publishes_the_documents_and_links_them_from_the_index():
    site = build_leaderboard([], make_settings(), documents=DOCS)
    for path in ("docs/index.html", "docs/metrics.html", "docs/api.html", "docs/readme.html",
                 "dataset/index.html", "dataset/croissant.json"):
        assert path in site, path
    assert json.loads(site["dataset/croissant.json"])["conformsTo"].endswith("croissant/1.0")
    index = site["index.html"].decode()
    for href in ("docs/index.html", "docs/metrics.html", "dataset/index.html",
                 "dataset/croissant.json", "https://arxiv.org/abs/2609.26567",
                 "https://arxiv.org/abs/2609.34684", "#submit", "#download", "../api/v1/docs"):
        assert f'href="{href}"' in index, href
    listed = links(site["docs/index.html"].decode())
    assert {"metrics.html", "api.html", "readme.html", "../dataset/index.html"} <= set(listed)


def test_without_documents_the_index_names_them_in_the_source():
    site = build_leaderboard([], make_settings())
    assert not any(path.startswith(("docs/", "dataset/")) for path in site)
    index = site["index.html"].decode()
    assert "<code>docs/metrics.md</code>" in index and 'href="docs/' not in index


def test_the_submit_block_names_the_server():
    configured = build_leaderboard([], make_settings(), public_url="https://audit.example.org")
    page = configured["index.html"].decode()
    assert ('export EXPAUDIT_SERVER=<span class="server-url" data-configured="yes">'
            "https://audit.example.org</span>") in page
    unconfigured = build_leaderboard([], make_settings())["index.html"].decode()
    assert 'data-configured="no"' in unconfigured and "location.origin" in unconfigured
    assert "this-server" not in page + unconfigured


def test_the_project_documents_are_found_and_every_page_link_resolves():
    documents = read_documents()
    assert {"docs/metrics.md", "docs/api.md", "README.md", DATASET_CARD} <= set(documents.markdown)
    site = build_leaderboard([], make_settings(), documents=documents)
    for path, body in site.items():
        if not (path.startswith(("docs/", "dataset/")) and path.endswith(".html")):
            continue
        for href in links(body.decode()):
            if href.startswith(("https://", "#")) or "api/v1" in href:
                continue
            target = posixpath.normpath(posixpath.join(posixpath.dirname(path),
                                                       href.split("#")[0]))
            assert target in site, (path, href)
