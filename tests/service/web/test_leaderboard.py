"""`/docs/...` and `/dataset/...` lead to the site's documents, where nginx serves them too."""

from __future__ import annotations

import pytest


@pytest.mark.parametrize("path, target", [
    ("/docs/", "/leaderboard/docs/index.html"),
    ("/docs/metrics.md", "/leaderboard/docs/metrics.html"),
    ("/docs/api.html", "/leaderboard/docs/api.html"),
    ("/dataset/", "/leaderboard/dataset/index.html"),
    ("/dataset/croissant.json", "/leaderboard/dataset/croissant.json"),
])
def test_documents_are_reached_at_their_short_paths(store, client, path, target):
    store.put_bytes("leaderboard/" + target[len("/leaderboard/"):], b"page")
    response = client.get(path)
    assert response.status_code == 302 and response.headers["Location"] == target
    assert client.get(target).data == b"page"
