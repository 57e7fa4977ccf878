"""Submissions through the service's front door: the Flask test client's, a running service's
over HTTP, and one recorded as the web process stores it."""

from __future__ import annotations

import hashlib
import io
import time
from typing import Callable

import requests

from service.submissions.records import Manifest, SubmissionRepo, new_submission_id, utc_now
from tests.support.servers import bearer


def stored_submission(store, body: bytes, settings=("toy-k4",), public=False) -> str:
    """A submission as the web process records it (input, manifest, queued status)."""
    sha = hashlib.sha256(body).hexdigest()
    store.put_if_absent(f"inputs/sha256/{sha}", body)
    sid = new_submission_id()
    repo = SubmissionRepo(store)
    repo.create(Manifest(submission_id=sid, owner="tok-test", owner_name="test", name="rule",
                         settings=tuple(settings), input_key=f"inputs/sha256/{sha}", input_sha256=sha,
                         input_format="csv", filename="scores.csv", selection_only=False,
                         created_at=utc_now()))
    if public:
        repo.make_public(sid)
    return sid


def submit_scores(client, token: str, body: bytes, filename: str = "scores.csv", **fields):
    """POST a scores file and form fields to /api/v1/submissions through the Flask test client."""
    form = {"file": (io.BytesIO(body), filename), **fields}
    return client.post("/api/v1/submissions", data=form, headers=bearer(token),
                       content_type="multipart/form-data")


def submit_selector(client, token: str, archive: bytes, filename: str = "selector.tar.gz",
                    **fields):
    """POST a selector archive and form fields to /api/v1/submissions through the Flask test client."""
    form = {"selector": (io.BytesIO(archive), filename), **fields}
    return client.post("/api/v1/submissions", data=form, headers=bearer(token),
                       content_type="multipart/form-data")


def post_submission(url: str, auth: dict, part: str, filename: str, content: bytes, **fields):
    """POST one file (`part` "file" for scores, "selector" for an archive) and form fields to
    the service running at `url`, over real HTTP."""
    kind = "application/gzip" if part == "selector" else "text/csv"
    return requests.post(f"{url}/api/v1/submissions", headers=auth,
                         files={part: (filename, content, kind)}, data=fields, timeout=30)


def wait_final(stack, auth: dict, sid: str, timeout: float = 150.0,
               on_status: Callable[[dict], None] | None = None) -> dict:
    """The status of submission `sid` on the running service `stack` once it is published or
    failed; every status read on the way is handed to `on_status`. Fails with the stack's logs
    when `timeout` passes first."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        response = requests.get(f"{stack.url}/api/v1/submissions/{sid}", headers=auth, timeout=10)
        if response.status_code == 200:
            status = response.json()
            if on_status is not None:
                on_status(status)
            if status["state"] in ("published", "failed"):
                return status
        time.sleep(0.3)
    raise AssertionError(f"{sid} not final after {timeout} s:\n{stack.logs()}")


def report_keys(document) -> set[str]:
    """Every key of a JSON document (a served report), at any depth: a sealed report must
    hold none that names cells."""
    if isinstance(document, dict):
        return set(document) | set().union(*(report_keys(v) for v in document.values()))
    if isinstance(document, list):
        return set().union(*(report_keys(v) for v in document)) if document else set()
    return set()
