"""A small Python client of the REST API (what `expaudit submit/status/download/...` use).

Every failure is one of the project's errors: an answer of 400 or more is an
`ApiError`, a server that does not answer (refused, timed out, cut off) is
`ServerUnreachable`, a `--server` that is not an http(s) URL is `BadServerUrl`;
requests' own exceptions never reach the caller.
"""

from __future__ import annotations

import contextlib
import io
import os
import tarfile
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path, PurePosixPath

import requests

from expaudit.errors import DataNotFound, InvalidInput, Unreachable, UserError
from service.process import defaults

FINAL_STATES = ("published", "failed")


class ApiError(UserError):
    """A non-2xx answer, with the API's error code, message and field."""

    def __init__(self, status: int, code: str, message: str, field: str | None = None,
                 details: dict | None = None, retry_after: float | None = None) -> None:
        self.status, self.code, self.message, self.field = status, code, message, field
        self.details = dict(details or {})
        self.retry_after = retry_after
        where = f" (field '{field}')" if field else ""
        super().__init__(f"HTTP {status} {code}: {message}{where}")


class ServerUnreachable(Unreachable):
    """The server did not answer: refused, timed out or cut off mid-answer."""


class BadServerUrl(InvalidInput, ValueError):
    """The server's URL is not one requests can send to (no scheme, a bad host)."""


class LinkInSelector(InvalidInput, ValueError):
    """A selector directory holds a symbolic link, which is not sent."""


class SelectorNotFound(DataNotFound, FileNotFoundError):
    """A selector to submit that is neither a directory, a file nor a pinned image reference."""


class TargetNotEmpty(InvalidInput, FileExistsError):
    """The directory to unpack a selector input into exists and is not empty."""


class BadSelectorInput(InvalidInput, ValueError):
    """A selector input archive from the server that unpacks too large or outside `input/`."""


class WaitTimedOut(UserError, TimeoutError):
    """A submission's status did not change for the whole wait."""


@contextlib.contextmanager
def _answered(url: str) -> Iterator[None]:
    """Turn requests' failures while talking to `url` into `ServerUnreachable` / `BadServerUrl`."""
    try:
        yield
    except (requests.exceptions.MissingSchema, requests.exceptions.InvalidSchema,
            requests.exceptions.InvalidURL, requests.exceptions.URLRequired) as exc:
        raise BadServerUrl(f"'{url}' is not a server URL: {exc}") from exc
    except (requests.ConnectionError, requests.Timeout) as exc:
        raise ServerUnreachable(f"cannot reach {url}: is the server running and --server "
                                "right?") from exc
    except requests.RequestException as exc:
        raise ServerUnreachable(f"{url}: no usable answer: {exc}") from exc


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
        with _answered(url):
            response = self.session.request(method, url, headers=headers, timeout=self.timeout,
                                            **kwargs)
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

    def submit_selector(self, selector: str | Path, setting: str, *, name: str | None = None,
                        public: bool = False, idempotency_key: str | None = None) -> dict:
        """Submit a selector: a directory holding `selector.py` (sent as a .tar.gz), a
        `.tar.gz` of one, or a Docker image reference pinned by digest."""
        fields = {"setting": setting, "public": "true" if public else "false"}
        if name:
            fields["name"] = name
        path = Path(selector)
        if path.is_dir():
            files = {"selector": (f"{path.resolve().name}.tar.gz", selector_archive(path),
                                  "application/gzip")}
        elif path.is_file():
            files = {"selector": (path.name, path.read_bytes(), "application/gzip")}
        elif "@sha256:" in str(selector):
            files = {"image": (None, str(selector))}  # a form field, sent as multipart
        else:
            raise SelectorNotFound(f"selector '{selector}' is neither a directory, a .tar.gz "
                                   "nor an image reference pinned by digest (name@sha256:...)")
        key = idempotency_key or str(uuid.uuid4())
        response = self._request("POST", "/api/v1/submissions", data=fields, files=files,
                                 headers={"Idempotency-Key": key})
        return response.json()

    def submissions(self, limit: int = 100) -> list[dict]:
        """The caller's own submissions, newest first."""
        return self._request("GET", "/api/v1/submissions",
                             params={"limit": limit}).json()["submissions"]

    def public_report_url(self, submission_id: str, setting: str) -> str:
        """Where a public submission's report is published (readable without a token)."""
        return f"{self.server}/leaderboard/reports/{submission_id}.{setting}.html"

    def selector_input(self, setting_id: str, directory: str | Path) -> Path:
        """Unpack the setting's /input tree (as a container submission gets it) into `directory`,
        which must be absent or empty; returns it."""
        target = Path(directory)
        if target.exists() and (not target.is_dir() or any(target.iterdir())):
            raise TargetNotEmpty(f"'{target}' is not an empty directory")
        response = self._request("GET", f"/api/v1/settings/{setting_id}/selector-input")
        target.mkdir(parents=True, exist_ok=True)
        with tarfile.open(fileobj=io.BytesIO(response.content), mode="r:gz") as tar:
            members = tar.getmembers()
            unpacked = sum(m.size for m in members)
            if unpacked > MAX_SELECTOR_INPUT_BYTES:
                raise BadSelectorInput(f"selector input of '{setting_id}': {unpacked} bytes unpacked, "
                                       f"over the {MAX_SELECTOR_INPUT_BYTES} this command accepts")
            for member in members:
                relative = _input_member_path(setting_id, member)
                destination = target / relative
                if member.isdir():
                    destination.mkdir(parents=True, exist_ok=True)
                else:
                    destination.parent.mkdir(parents=True, exist_ok=True)
                    destination.write_bytes(tar.extractfile(member).read())
                os.chmod(destination, member.mode & 0o755)
        return target

    def status(self, submission_id: str) -> dict:
        return self._request("GET", f"/api/v1/submissions/{submission_id}").json()

    def wait(self, submission_id: str, *, timeout: float = 600.0,
             on_update: Callable[[dict], None] | None = None,
             interval: float = defaults.STATUS_POLL_INTERVAL_S, seen: dict | None = None) -> dict:
        """Poll until the submission is published or failed; returns the final status.

        `on_update` sees every change of state, progress, reason or rollout
        count. A wait gives up after `timeout` seconds *without a change*, so a
        submission whose missing cells take an hour to compute is followed to
        the end while it moves. Polling slows down while nothing changes (up to
        `STATUS_POLL_MAX_INTERVAL_S`) and honours a 429's Retry-After, so a long
        wait stays inside the per-token rate limit. `seen` is a status the caller
        already showed (the upload's answer): it is not reported again.
        """
        deadline = time.monotonic() + timeout
        last = None if seen is None else _view(seen)
        pause = interval
        while True:
            try:
                status = self.status(submission_id)
            except ApiError as exc:
                if exc.status != 429:
                    raise
                time.sleep(exc.retry_after or defaults.STATUS_POLL_MAX_INTERVAL_S)
                continue
            view = _view(status)
            if view != last:
                if on_update is not None:
                    on_update(status)
                deadline = time.monotonic() + timeout
                pause = interval
            else:
                pause = min(pause * 1.5, max(interval, defaults.STATUS_POLL_MAX_INTERVAL_S))
            last = view
            if status["state"] in FINAL_STATES:
                return status
            if time.monotonic() > deadline:
                raise WaitTimedOut(f"submission {submission_id} still {status['state']} with no "
                                   f"change for {timeout} s")
            time.sleep(pause)

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
        with target.open("wb") as handle, _answered(response.url):
            for chunk in response.iter_content(1 << 16):
                handle.write(chunk)
        return target

    def create_token(self, name: str, owner: str, admin: bool = False) -> dict:
        return self._request("POST", "/api/v1/tokens",
                             json={"name": name, "owner": owner, "admin": admin}).json()


MAX_SELECTOR_INPUT_BYTES = 8 * 1024**3
"""The most a selector input tree may unpack to (the largest setting's is far smaller)."""


def _input_member_path(setting_id: str, member: tarfile.TarInfo) -> PurePosixPath:
    """The path under the target of one entry of a selector input archive.

    Only plain files and directories under ``input/`` are accepted, and no part
    may be ``..``: an archive from a hostile server (or a plain-HTTP middle)
    must not write outside the target directory.
    """
    path = PurePosixPath(member.name)
    parts = path.parts
    if (path.is_absolute() or not parts or parts[0] != "input" or ".." in parts
            or not (member.isfile() or member.isdir())):
        raise BadSelectorInput(f"selector input of '{setting_id}': unexpected entry '{member.name}'")
    return PurePosixPath(*parts[1:]) if len(parts) > 1 else PurePosixPath()


def selector_archive(directory: Path) -> bytes:
    """A .tar.gz of a selector directory, files at the top (caches and hidden files left out)."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for path in sorted(Path(directory).rglob("*")):
            relative = path.relative_to(directory)
            if "__pycache__" in relative.parts or any(p.startswith(".") for p in relative.parts):
                continue
            if path.is_symlink():
                raise LinkInSelector(f"selector '{directory}': '{relative}' is a link; links "
                                     "are not sent")
            tar.add(path, arcname=relative.as_posix(), recursive=False)
    return buffer.getvalue()


def _view(status: dict) -> tuple:
    """What of a status a waiting user sees change: state, progress, reason, and the
    rollouts' cells done, of total, and connected runners."""
    rollouts = status.get("rollouts") or {}
    return (status["state"], status["progress"], status.get("reason"), rollouts.get("done"),
            rollouts.get("total"), rollouts.get("runners"))


def _retry_after(response: requests.Response) -> float | None:
    """The Retry-After header in seconds (the API sends delta-seconds), or None."""
    try:
        return max(0.0, float(response.headers["Retry-After"]))
    except (KeyError, ValueError):
        return None


def _api_error(response: requests.Response) -> ApiError:
    retry = _retry_after(response)
    try:
        body = response.json()["error"]
        return ApiError(response.status_code, body.get("code", "error"), body.get("message", ""),
                        body.get("field"), body, retry_after=retry)
    except (ValueError, KeyError, TypeError):
        return ApiError(response.status_code, "http_error", response.text[:200], retry_after=retry)
