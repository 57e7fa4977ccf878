"""The HTTP client of the REST API, on the standard library alone (what `expaudit submit,
status, download, selector input ...` and a submitter's own scripts use).

Every failure is a `ClientError`: an answer of 400 or more is an `ApiError`, a
server that does not answer (refused, timed out, cut off) is `ServerUnreachable`,
a server address that is no http(s) URL is `BadServerUrl`. The bearer token is
never sent on a redirect (downloads redirect to presigned store URLs).
"""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path

from expaudit_client.errors import (ApiError, BadServerUrl, DownloadNotOffered, SelectorNotFound,
                                    ServerUnreachable, UploadTooLarge, WaitTimedOut)
from expaudit_client.selector_files import selector_archive, unpack_input

DEFAULT_SERVER = "http://127.0.0.1:8000"
"""Where `expaudit serve` listens by default: the server when neither an argument nor
$EXPAUDIT_SERVER names one."""

FINAL_STATES = ("published", "failed")
"""The states a submission never leaves."""

STATUS_POLL_INTERVAL_S = 0.5
"""How often `Client.wait` polls a submission's status right after it changed."""

STATUS_POLL_MAX_INTERVAL_S = 5.0
"""The polling slows down to this while a status does not change (a wait for rollouts
lasts minutes): 12 requests a minute, a tenth of the rate limit."""

CHUNK_BYTES = 1 << 16
"""Bytes read at a time from a download."""


class Client:
    """Talks to one service instance.

    Args:
        server: base URL, e.g. http://127.0.0.1:8000.
        token: bearer token; None for anonymous reads.
        timeout: seconds per HTTP request.
    """

    def __init__(self, server: str = DEFAULT_SERVER, token: str | None = None,
                 timeout: float = 60.0) -> None:
        self.server = server_url(server)
        self.token = token
        self.timeout = timeout

    @classmethod
    def from_env(cls, server: str | None = None, token: str | None = None,
                 environ: Mapping[str, str] | None = None, **kwargs) -> "Client":
        """A client of `server` with `token`, each else $EXPAUDIT_SERVER / $EXPAUDIT_TOKEN."""
        env = os.environ if environ is None else environ
        return cls(server if server is not None else env.get("EXPAUDIT_SERVER") or DEFAULT_SERVER,
                   token if token is not None else env.get("EXPAUDIT_TOKEN") or None, **kwargs)

    # ------------------------------------------------------------------ transport

    def _url(self, path: str, params: Mapping[str, object] | None = None) -> str:
        url = path if path.startswith(("http://", "https://")) else f"{self.server}{path}"
        if params:
            url += ("&" if "?" in url else "?") + urllib.parse.urlencode(params)
        return url

    @contextlib.contextmanager
    def _open(self, method: str, path: str, *, params: Mapping[str, object] | None = None,
              body: bytes | None = None, headers: Mapping[str, str] | None = None
              ) -> Iterator[http.client.HTTPResponse]:
        """The answer to one request, open for reading; 400 or more raises `ApiError`."""
        url = self._url(path, params)
        request = urllib.request.Request(url, data=body, method=method,
                                         headers=dict(headers or {}))
        if self.token:
            request.add_unredirected_header("Authorization", f"Bearer {self.token}")
        try:
            response = urllib.request.urlopen(request, timeout=self.timeout)
        except urllib.error.HTTPError as exc:
            with exc:
                error = _api_error(exc.code, exc.headers, _read(exc, url))
            if error.status == 401 and not self.token:
                error.args = (f"{error}: no token was sent; set EXPAUDIT_TOKEN (or pass "
                              "--token) to a token from the service's operator",)
            raise error from None
        except urllib.error.URLError as exc:
            raise ServerUnreachable(f"cannot reach {url} ({exc.reason}): is the server running "
                                    "and --server right?") from exc
        except (http.client.HTTPException, OSError) as exc:
            raise ServerUnreachable(f"{url}: no usable answer ({exc})") from exc
        with response:
            yield response

    def _call(self, method: str, path: str, **kwargs) -> bytes:
        with self._open(method, path, **kwargs) as response:
            return _read(response, response.url)

    def _json(self, method: str, path: str, **kwargs):
        return json.loads(self._call(method, path, **kwargs))

    def _post_form(self, fields: Mapping[str, str], files: Mapping[str, tuple[str, bytes, str]],
                   idempotency_key: str | None) -> dict:
        body, content_type = multipart(fields, files)
        headers = {"Content-Type": content_type,
                   "Idempotency-Key": idempotency_key or str(uuid.uuid4())}
        return self._json("POST", "/api/v1/submissions", body=body, headers=headers)

    # ------------------------------------------------------------------ submissions

    def submit(self, path: str | Path, settings: list[str] | None = None, *, name: str | None = None,
               public: bool = False, idempotency_key: str | None = None,
               input: str | None = None) -> dict:
        """Upload a scores file (CSV, Parquet or JSON), or on a readout setting a features or
        predictions file (Parquet or NPZ; `input` "features", the server's default, or
        "predictions"); returns the status document (`queued`). A file over the server's
        upload limit is refused before a byte is sent."""
        path = Path(path)
        self._check_size(path)
        fields = {"public": "true" if public else "false"}
        if settings:
            fields["setting"] = ",".join(settings)
        if name:
            fields["name"] = name
        if input:
            fields["input"] = input
        return self._post_form(fields, {"file": (path.name, path.read_bytes(),
                                                 "application/octet-stream")}, idempotency_key)

    def _check_size(self, path: Path) -> None:
        """Raise `UploadTooLarge` for a file over the server's limit (`GET /api/v1/limits`; a
        server without that route checks on its own, answering 413)."""
        size = path.stat().st_size
        try:
            limit = self.limits()["max_upload_bytes"]
        except ApiError as exc:
            if exc.status == 404:
                return
            raise
        if size > limit:
            raise UploadTooLarge(f"{path}: {size:,} bytes, over the server's upload limit of "
                                 f"{limit:,} bytes ({self.server}); nothing was sent")

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
            files, fields = {}, {**fields, "image": str(selector)}
        else:
            raise SelectorNotFound(f"selector '{selector}' is neither a directory, a .tar.gz "
                                   "nor an image reference pinned by digest (name@sha256:...)")
        return self._post_form(fields, files, idempotency_key)

    def submissions(self, limit: int = 100) -> list[dict]:
        """The caller's own submissions, newest first."""
        return self._json("GET", "/api/v1/submissions", params={"limit": limit})["submissions"]

    def status(self, submission_id: str) -> dict:
        return self._json("GET", f"/api/v1/submissions/{submission_id}")

    def wait(self, submission_id: str, *, timeout: float = 600.0,
             on_update: Callable[[dict], None] | None = None,
             interval: float = STATUS_POLL_INTERVAL_S, seen: dict | None = None) -> dict:
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
                time.sleep(exc.retry_after or STATUS_POLL_MAX_INTERVAL_S)
                continue
            view = _view(status)
            if view != last:
                if on_update is not None:
                    on_update(status)
                deadline = time.monotonic() + timeout
                pause = interval
            else:
                pause = min(pause * 1.5, max(interval, STATUS_POLL_MAX_INTERVAL_S))
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
        body = self._call("GET", f"/api/v1/submissions/{submission_id}/report", params=params)
        return json.loads(body) if fmt == "json" else body.decode()

    def selector_run(self, submission_id: str) -> dict:
        """A selector submission's run: status, reason, exit code and its stdout/stderr tails."""
        return self._json("GET", f"/api/v1/submissions/{submission_id}/run")

    def publish(self, submission_id: str) -> dict:
        return self._json("POST", f"/api/v1/submissions/{submission_id}/publish")

    def withdraw(self, submission_id: str) -> dict:
        """Take one of my submissions (any, with the admin token) off the public leaderboard."""
        return self._json("POST", f"/api/v1/submissions/{submission_id}/withdraw")

    def rename(self, submission_id: str, name: str) -> dict:
        """Give one of my submissions a new display name (on the leaderboard too)."""
        return self._json("POST", f"/api/v1/submissions/{submission_id}/rename",
                          body=json.dumps({"name": name}).encode(),
                          headers={"Content-Type": "application/json"})

    def public_report_url(self, submission_id: str, setting: str) -> str:
        """Where a public submission's report is published (readable without a token)."""
        return f"{self.server}/leaderboard/reports/{submission_id}.{setting}.html"

    # ------------------------------------------------------------------ settings and data

    def settings(self) -> list[dict]:
        return self._json("GET", "/api/v1/settings")["settings"]

    def setting(self, setting_id: str) -> dict:
        """One setting's document: its completeness and `downloads` (key: URL)."""
        return self._json("GET", f"/api/v1/settings/{setting_id}")

    def leaderboard(self, setting_id: str | None = None) -> dict:
        return self._json("GET", "/api/v1/leaderboard" + (f"/{setting_id}" if setting_id else ""))

    def limits(self) -> dict:
        """What the server accepts (`max_upload_bytes`)."""
        return self._json("GET", "/api/v1/limits")

    def selector_input(self, setting_id: str, directory: str | Path) -> Path:
        """Unpack the setting's /input tree (as a container submission gets it) into `directory`,
        which must be absent or empty; returns it."""
        archive = self._call("GET", f"/api/v1/settings/{setting_id}/selector-input")
        return unpack_input(setting_id, archive, directory)

    def download(self, setting_id: str, what: str = "outcomes", fmt: str | None = "parquet",
                 out_dir: str | Path = ".") -> Path:
        """Save one download of a setting (following a presigned-URL redirect); returns its path."""
        params = {"format": fmt} if fmt else None
        return self._save(f"/api/v1/settings/{setting_id}/{what}", params, setting_id,
                          f"{setting_id}-{what}" + (f".{fmt}" if fmt else ""), Path(out_dir))

    def download_all(self, setting_id: str, keys: list[str] | None = None,
                     fmt: str | None = None, out_dir: str | Path = ".") -> list[Path]:
        """Save the setting's downloads named by `keys` (None: every one it offers, as its
        document's `downloads` lists them); `fmt` replaces the format of those that have one."""
        offered = self.setting(setting_id).get("downloads", {})
        unknown = [key for key in keys or () if key not in offered]
        if unknown:
            raise DownloadNotOffered(f"setting '{setting_id}' offers no download {unknown}; it "
                                     f"offers {sorted(offered)}")
        saved = []
        for key in keys or list(offered):
            url = urllib.parse.urlsplit(offered[key])
            params = dict(urllib.parse.parse_qsl(url.query))
            if fmt and "format" in params:
                params["format"] = fmt
            fallback = f"{setting_id}-{key}" + (f".{params['format']}" if "format" in params else "")
            saved.append(self._save(url.path, params or None, setting_id, fallback, Path(out_dir)))
        return saved

    def _save(self, path: str, params: Mapping[str, object] | None, setting_id: str,
              fallback: str, out_dir: Path) -> Path:
        """Stream one answer to a file named by its Content-Disposition (else `fallback`)."""
        with self._open("GET", path, params=params) as response:
            name = _file_name(response, setting_id) or fallback
            target = out_dir / name
            target.parent.mkdir(parents=True, exist_ok=True)
            partial = target.with_name(target.name + ".part")
            try:
                with partial.open("wb") as handle:
                    while chunk := response.read(CHUNK_BYTES):
                        handle.write(chunk)
            except (http.client.HTTPException, OSError) as exc:
                partial.unlink(missing_ok=True)
                if isinstance(exc, OSError) and not isinstance(exc, ConnectionError | TimeoutError):
                    raise
                raise ServerUnreachable(f"{response.url}: cut off mid-download ({exc})") from exc
            partial.replace(target)
        return target

    def create_token(self, name: str, owner: str, admin: bool = False) -> dict:
        body = json.dumps({"name": name, "owner": owner, "admin": admin}).encode()
        return self._json("POST", "/api/v1/tokens", body=body,
                          headers={"Content-Type": "application/json"})


def server_url(server: str) -> str:
    """`server` as a base URL without a trailing slash; refuses what is no http(s) URL."""
    text = server.strip().rstrip("/")
    if "://" not in text:  # 127.0.0.1:8000: the scheme is the user's to choose (a token in clear)
        raise BadServerUrl(f"'{server}' is not a server URL: it has no scheme; give "
                           f"http://{text} or https://{text}")
    parts = urllib.parse.urlsplit(text)
    try:
        parts.port  # noqa: B018 (parsing the port is the check)
    except ValueError:
        raise BadServerUrl(f"'{server}' is not a server URL: its port is not a number") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise BadServerUrl(f"'{server}' is not a server URL: give http://HOST:PORT or "
                           "https://HOST")
    return text


def multipart(fields: Mapping[str, str], files: Mapping[str, tuple[str, bytes, str]]
              ) -> tuple[bytes, str]:
    """A multipart/form-data body (RFC 7578) and its Content-Type."""
    boundary = uuid.uuid4().hex
    parts = []
    for name, value in fields.items():
        parts.append(f'--{boundary}\r\nContent-Disposition: form-data; name="{_quoted(name)}"'
                     f"\r\n\r\n".encode() + value.encode() + b"\r\n")
    for name, (filename, data, content_type) in files.items():
        parts.append(f'--{boundary}\r\nContent-Disposition: form-data; name="{_quoted(name)}"; '
                     f'filename="{_quoted(filename)}"\r\nContent-Type: {content_type}\r\n\r\n'
                     .encode() + data + b"\r\n")
    parts.append(f"--{boundary}--\r\n".encode())
    return b"".join(parts), f"multipart/form-data; boundary={boundary}"


def _quoted(text: str) -> str:
    """A form name or file name inside double quotes (quotes and line breaks percent-encoded)."""
    return text.replace("\\", "\\\\").replace('"', "%22").replace("\r", "%0D").replace("\n", "%0A")


def _read(response, url: str) -> bytes:
    try:
        return response.read()
    except (http.client.HTTPException, OSError) as exc:
        raise ServerUnreachable(f"{url}: cut off mid-answer ({exc})") from exc


def _file_name(response, setting_id: str) -> str | None:
    """The file name an answer names (Content-Disposition), else the last part of its URL
    when that is a file name; led by the setting id either way."""
    name = response.headers.get_filename()
    if not name:
        last = urllib.parse.urlsplit(response.url).path.rsplit("/", 1)[-1]
        name = last if "." in last else None
    if not name:
        return None
    name = Path(name).name
    return name if name.startswith(setting_id) else f"{setting_id}-{name}"


def _view(status: dict) -> tuple:
    """What of a status a waiting user sees change: state, progress, reason, and the
    rollouts' cells done, of total, and connected runners."""
    rollouts = status.get("rollouts") or {}
    return (status["state"], status["progress"], status.get("reason"), rollouts.get("done"),
            rollouts.get("total"), rollouts.get("runners"))


def _retry_after(headers) -> float | None:
    """The Retry-After header in seconds (the API sends delta-seconds), or None."""
    try:
        return max(0.0, float(headers["Retry-After"]))
    except (KeyError, TypeError, ValueError):
        return None


def _api_error(status: int, headers, body: bytes) -> ApiError:
    retry = _retry_after(headers)
    try:
        error = json.loads(body)["error"]
        return ApiError(status, error.get("code", "error"), error.get("message", ""),
                        error.get("field"), error, retry_after=retry)
    except (ValueError, KeyError, TypeError, AttributeError):
        return ApiError(status, "http_error", body[:200].decode(errors="replace"),
                        retry_after=retry)
