"""A small Python client of the REST API (what `expaudit submit/status/download` use)."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from pathlib import Path

import requests

from service import defaults

FINAL_STATES = ("published", "failed")


class ApiError(Exception):
    """A non-2xx answer, with the API's error code, message and field."""

    def __init__(self, status: int, code: str, message: str, field: str | None = None,
                 details: dict | None = None) -> None:
        self.status, self.code, self.message, self.field = status, code, message, field
        self.details = dict(details or {})
        where = f" (field '{field}')" if field else ""
        super().__init__(f"HTTP {status} {code}: {message}{where}")


class Client:
    """Talks to one service instance.

    Args:
        server: base URL, e.g. http://127.0.0.1:8000.
        token: bearer token; None for anonymous reads.
        timeout: seconds per HTTP request.
    """

    def __init__(self, server: str, token: str | None = None, timeout: float = 60.0,
                 session: requests.Session | None = None) -> None:
        self.server = server.rstrip("/")
        self.token = token
        self.timeout = timeout
        self.session = session or requests.Session()

    def _headers(self, extra: dict | None = None) -> dict:
        headers = dict(extra or {})
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        return headers

    def _request(self, method: str, path: str, **kwargs) -> requests.Response:
        headers = self._headers(kwargs.pop("headers", None))
        url = path if path.startswith("http") else f"{self.server}{path}"
        response = self.session.request(method, url, headers=headers, timeout=self.timeout, **kwargs)
        if response.status_code >= 400:
            raise _api_error(response)
        return response

    def submit(self, path: str | Path, settings: list[str] | None = None, *, name: str | None = None,
               public: bool = False, idempotency_key: str | None = None) -> dict:
        """Upload a scores file; returns the status document (state `queued`)."""
        path = Path(path)
        fields = {"public": "true" if public else "false"}
        if settings:
            fields["setting"] = ",".join(settings)
        if name:
            fields["name"] = name
        key = idempotency_key or str(uuid.uuid4())
        with path.open("rb") as handle:
            response = self._request("POST", "/api/v1/submissions", data=fields,
                                     files={"file": (path.name, handle)},
                                     headers={"Idempotency-Key": key})
        return response.json()

    def status(self, submission_id: str) -> dict:
        return self._request("GET", f"/api/v1/submissions/{submission_id}").json()

    def wait(self, submission_id: str, *, timeout: float = 600.0,
             on_update: Callable[[dict], None] | None = None,
             interval: float = defaults.STATUS_POLL_INTERVAL_S) -> dict:
        """Poll until the submission is published or failed; returns the final status."""
        deadline = time.monotonic() + timeout
        last = None
        while True:
            status = self.status(submission_id)
            view = (status["state"], status["progress"], status.get("reason"))
            if on_update is not None and view != last:
                on_update(status)
            last = view
            if status["state"] in FINAL_STATES:
                return status
            if time.monotonic() > deadline:
                raise TimeoutError(f"submission {submission_id} still {status['state']} after {timeout} s")
            time.sleep(interval)

    def report(self, submission_id: str, setting: str | None = None, fmt: str = "json"):
        params = {"format": fmt}
        if setting:
            params["setting"] = setting
        response = self._request("GET", f"/api/v1/submissions/{submission_id}/report", params=params)
        return response.json() if fmt == "json" else response.text

    def publish(self, submission_id: str) -> dict:
        return self._request("POST", f"/api/v1/submissions/{submission_id}/publish").json()

    def settings(self) -> list[dict]:
        return self._request("GET", "/api/v1/settings").json()["settings"]

    def leaderboard(self, setting_id: str | None = None) -> dict:
        path = "/api/v1/leaderboard" + (f"/{setting_id}" if setting_id else "")
        return self._request("GET", path).json()

    def download(self, setting_id: str, what: str = "outcomes", fmt: str = "parquet",
                 out_dir: str | Path = ".") -> Path:
        """Save a download (following a presigned-URL redirect) and return its path."""
        response = self._request("GET", f"/api/v1/settings/{setting_id}/{what}",
                                 params={"format": fmt}, stream=True)
        target = Path(out_dir) / f"{setting_id}-{what}.{fmt}"
        target.parent.mkdir(parents=True, exist_ok=True)
        with target.open("wb") as handle:
            for chunk in response.iter_content(1 << 16):
                handle.write(chunk)
        return target

    def create_token(self, name: str, admin: bool = False) -> dict:
        return self._request("POST", "/api/v1/tokens", json={"name": name, "admin": admin}).json()


def _api_error(response: requests.Response) -> ApiError:
    try:
        body = response.json()["error"]
        return ApiError(response.status_code, body.get("code", "error"), body.get("message", ""),
                        body.get("field"), body)
    except (ValueError, KeyError, TypeError):
        return ApiError(response.status_code, "http_error", response.text[:200])
