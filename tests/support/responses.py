"""Checks on answers from the Flask test client."""

from __future__ import annotations


def get_ok(client, url: str):
    """GET `url` and insist on a 200, showing the start of the body when it is not."""
    response = client.get(url)
    assert response.status_code == 200, (url, response.status_code, response.data[:300])
    return response
