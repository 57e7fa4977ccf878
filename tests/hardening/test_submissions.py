"""Concurrent create requests over real HTTP (gunicorn, four web processes, no job worker):
the per-token cap holds under a burst, and a retry with the same Idempotency-Key never 404s."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import requests

from service.submissions.records import SubmissionRepo
from tests.support.servers import (RedisServer, _descendants, bearer, new_token, scores_csv,
                                   synthetic_setting, web_stack)

CAP = 4


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    directory = tmp_path_factory.mktemp("burst")
    redis_server = RedisServer(directory / "redis").start()
    # large enough that reading an upload takes a while: concurrent requests overlap
    setting = synthetic_setting("burst-k20", k=20, n_states=100, draws=5, seeds=2)
    stack = web_stack(directory, redis_server, setting, workers=4, EXPAUDIT_MAX_ACTIVE_SUBMISSIONS=str(CAP))
    yield stack, setting
    stack.stop()
    redis_server.stop()


def _post(stack, headers, body: bytes, setting: str, name: str, key: str | None = None):
    extra = {"Idempotency-Key": key} if key else {}
    return requests.post(f"{stack.url}/api/v1/submissions", headers={**headers, **extra},
                         files={"file": ("s.csv", body, "text/csv")},
                         data={"setting": setting, "name": name}, timeout=60)


def test_a_burst_of_uploads_from_one_token_gets_exactly_the_cap(stack):
    stack, (summary, data) = stack
    headers = bearer(new_token(stack.url, "burst"))
    body = scores_csv(data)
    barrier = threading.Barrier(12)

    def one(i: int) -> int:
        barrier.wait()
        return _post(stack, headers, body, summary.id, f"burst {i}").status_code

    with ThreadPoolExecutor(12) as pool:
        statuses = sorted(pool.map(one, range(12)))
    assert statuses == [202] * CAP + [429] * (12 - CAP), statuses
    mine = requests.get(f"{stack.url}/api/v1/submissions", headers=headers, timeout=60).json()
    assert len(mine["submissions"]) == CAP
    refused = _post(stack, headers, body, summary.id, "one more")
    assert refused.status_code == 429 and refused.json()["error"]["code"] == "too_many_active"


def _sleeping_web_process(stack, deadline_s: float = 30) -> int:
    """A web process waiting in a sleep (its kernel wait channel is a nanosleep): idle
    gunicorn workers wait in select, so this is the one waiting for the status object."""
    deadline = time.monotonic() + deadline_s
    while time.monotonic() < deadline:
        for pid in _descendants(stack.web.proc.pid):
            try:
                if "nanosleep" in Path(f"/proc/{pid}/wchan").read_text():
                    return pid
            except OSError:
                continue
        time.sleep(0.001)
    raise AssertionError("no web process waited for the status object")


def test_a_retry_that_finds_the_submission_half_written_waits_for_it(stack):
    """The first request with a key has written its manifest and not yet its status (its
    status object is held back here until the retry's web process is seen waiting for it,
    then written, as the first request would): the retry answers the submission, not 404."""
    stack, (summary, data) = stack
    headers = bearer(new_token(stack.url, "retry"))
    body = scores_csv(data, seed=3)
    first = _post(stack, headers, body, summary.id, "retry", key="key-1")
    assert first.status_code == 202, first.text
    sid = first.json()["id"]
    status_path = stack.directory / "store" / SubmissionRepo.status_key(sid)
    status = status_path.read_bytes()
    status_path.unlink()
    with ThreadPoolExecutor(1) as pool:
        answer = pool.submit(_post, stack, headers, body, summary.id, "retry", key="key-1")
        try:
            waiting = _sleeping_web_process(stack)
        finally:  # written whole at once, as the store writes (a temporary file, then a rename)
            partial = status_path.with_name(status_path.name + ".writing")
            partial.write_bytes(status)
            partial.replace(status_path)
        retry = answer.result()
    assert waiting in _descendants(stack.web.proc.pid)
    assert retry.status_code == 202, retry.text
    assert retry.json()["id"] == sid and retry.headers["Idempotent-Replayed"] == "true"
