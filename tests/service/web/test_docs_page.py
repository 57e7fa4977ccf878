"""The API reference page (`/api/v1/docs`) reads on a phone and leads back to the leaderboard."""

from __future__ import annotations

import re

from service.web.openapi import docs_page, openapi_document


def test_the_docs_page_fits_a_phone_and_links_to_the_leaderboard():
    page = docs_page(openapi_document())
    assert re.search(r"<meta name='viewport' content='width=device-width, initial-scale=1'>", page)
    links = re.findall(r"<a href='([^']*)'>([^<]*)</a>", page)
    assert ("/", "leaderboard") in links, links
    assert ("/api/v1/openapi.json", "openapi.json") in links
