"""Chunked request bodies under gunicorn, over real HTTP: held to the upload limit, never cut short."""

from __future__ import annotations

import pytest
import requests

from tests.support.servers import bearer, new_token, scores_csv, synthetic_setting, web_stack

LIMIT = 4000


@pytest.fixture(scope="module")
def stack(tmp_path_factory, redis_server):
    directory = tmp_path_factory.mktemp("chunked")
    setting = synthetic_setting("chunk-k3", k=3, n_states=4, draws=2, seeds=2)
    stack = web_stack(directory, redis_server, setting, EXPAUDIT_MAX_UPLOAD_BYTES=str(LIMIT))
    yield stack, setting, bearer(new_token(stack.url, "chunked", timeout=10))
    stack.stop()


def _chunks(body: bytes, size: int = 500):
    for start in range(0, len(body), size):
        yield body[start:start + size]


def _post_chunked(stack, headers, body: bytes, **params):
    return requests.post(f"{stack.url}/api/v1/submissions", params={"filename": "s.csv", **params},
                         data=_chunks(body), headers={**headers, "Content-Type": "text/csv"}, timeout=30)


def test_an_over_limit_chunked_upload_is_refused_not_truncated(stack):
    stack, setting, headers = stack
    summary, data = setting
    body = scores_csv(data)
    padded = body + b"\n".join([body.splitlines()[-1]] * 200)  # well past the limit, rows repeated
    assert len(padded) > LIMIT
    response = _post_chunked(stack, headers, padded, setting=summary.id)
    assert response.status_code == 413, response.text
    assert response.json()["error"]["code"] == "too_large"
    assert response.json()["error"]["field"] == "body"


def test_a_chunked_upload_within_the_limit_is_read_whole(stack):
    stack, setting, headers = stack
    summary, data = setting
    body = scores_csv(data)
    assert len(body) < LIMIT
    response = _post_chunked(stack, headers, body, setting=summary.id)
    assert response.status_code == 202, response.text
    assert response.json()["settings"] == [summary.id]
