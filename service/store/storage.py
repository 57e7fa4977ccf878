"""Object storage behind one small interface: a local directory or S3.

The object store is the service's system of record: submission manifests and
states, uploaded inputs, reports, tokens and the published leaderboard all
live here. Every write is atomic (a reader sees the old object or the new
one, never a torn file). Content-addressed objects are written once with
`put_if_absent`.

Two implementations:

- `LocalStore(root)`: a directory; atomic writes by a temporary file in the
  same directory and `os.replace`; the embedded default.
- `S3Store(client, bucket, prefix)`: any S3-protocol server through a boto3
  client the caller builds (`make_s3_client`); PUT is atomic in S3.
"""

from __future__ import annotations

import abc
import errno
import os
import re
import tempfile
from pathlib import Path

from expaudit.errors import InternalError, InvalidInput
from service.process import defaults

_KEY_PATTERN = re.compile(r"[A-Za-z0-9._=-]+(/[A-Za-z0-9._=-]+)*")
"""Keys are relative slash-separated paths of safe characters (they become
file names in `LocalStore` and URL paths in `S3Store`)."""
MAX_KEY_PART_LENGTH = 255
"""Longest part of a key: a file name on common local file systems."""
MAX_KEY_LENGTH = 1024
"""Longest key: S3's limit."""


class StoreError(InternalError):
    """Base class of object-store problems: the service's own, never charged to a submitter."""


class ObjectNotFound(StoreError):
    """The key does not exist in the store."""

    def __init__(self, key: str) -> None:
        self.key = key
        super().__init__(f"object '{key}' not found")


class StoreUnavailable(StoreError):
    """The store could not be reached, failed on its side or refused a write (retry later).

    `reason` is a few words for API clients (no path, host or credential);
    the message, for the operator's log, may say more.
    """

    def __init__(self, message: str, reason: str = "unreachable") -> None:
        super().__init__(message)
        self.reason = reason


def _local_failure(operation: str, exc: OSError) -> StoreUnavailable:
    """A local store's OS error as `StoreUnavailable`, named by its errno, never its path."""
    name = errno.errorcode.get(exc.errno, type(exc).__name__) if exc.errno else type(exc).__name__
    reason = {"EACCES": "not writable: permission denied", "EPERM": "not writable: permission denied",
              "EROFS": "not writable: read-only file system",
              "ENOSPC": "not writable: no space left", "EDQUOT": "not writable: quota exceeded",
              }.get(name, f"{operation} failed: {name}")
    return StoreUnavailable(f"local store {operation} failed: {name}", reason=reason)


class InvalidKey(InvalidInput, ValueError):
    """A key that is not a safe relative path (e.g. built from a malformed id)."""


class BadStoreUrl(InvalidInput, ValueError):
    """A store URL that is not `s3://bucket[/prefix]`."""


def check_key(key: str) -> str:
    """Return `key` if it is a safe relative object key, else raise `InvalidKey` (a ValueError).

    Safe on every backend: no `.` or `..` part, no part longer than a file
    name may be on a local disk, and the whole key within S3's 1024 bytes.
    """
    if not isinstance(key, str) or not _KEY_PATTERN.fullmatch(key) or len(key) > MAX_KEY_LENGTH or any(
        part in (".", "..") or len(part) > MAX_KEY_PART_LENGTH for part in key.split("/")
    ):
        raise InvalidKey(f"invalid object key {key[:300]!r}: use a relative path of letters, digits "
                         f"and ._=- separated by '/', parts of at most {MAX_KEY_PART_LENGTH} characters")
    return key


class ObjectStore(abc.ABC):
    """The operations the service needs from a blob store."""

    @abc.abstractmethod
    def put_bytes(self, key: str, data: bytes, content_type: str = "application/octet-stream") -> None:
        """Write `data` under `key` atomically, replacing any previous object."""

    @abc.abstractmethod
    def put_if_absent(self, key: str, data: bytes,
                      content_type: str = "application/octet-stream") -> bool:
        """Write `data` under `key` unless the key exists; True if this call wrote it.

        For immutable, content-addressed objects: an existing object under the
        same key already holds the same bytes.
        """

    @abc.abstractmethod
    def get_bytes(self, key: str) -> bytes:
        """The object's bytes; raises `ObjectNotFound` when the key is absent."""

    @abc.abstractmethod
    def exists(self, key: str) -> bool:
        """Whether an object is stored under `key`."""

    @abc.abstractmethod
    def list_keys(self, prefix: str = "") -> list[str]:
        """All keys that start with `prefix`, sorted."""

    @abc.abstractmethod
    def delete(self, key: str) -> None:
        """Remove the object under `key` if present (no error when absent)."""

    def url_for(self, key: str, expires: int = defaults.PRESIGNED_URL_EXPIRY_S) -> str | None:
        """A presigned GET URL valid for `expires` seconds, or None when the
        store cannot hand out URLs (the caller then serves the bytes itself)."""
        return None

    def describe(self) -> str:
        """A short human description (no secrets) for logs and /healthz."""
        return type(self).__name__

    def check_writable(self, probe: str) -> None:
        """Write and delete the object `probe` (a key of its own per process); raises
        `StoreUnavailable` when the store cannot take a write.

        The probe holds `HEALTHZ_PROBE_BYTES` bytes: an empty file still fits on a full
        file system (it takes an inode and no block), so an empty probe said a full store
        was writable while every submission was refused."""
        self.put_bytes(probe, b"\n" * defaults.HEALTHZ_PROBE_BYTES)
        self.delete(probe)


class LocalStore(ObjectStore):
    """A directory on the local file system."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)
        self._root_str = str(self.root)

    def _path(self, key: str) -> Path:
        return self.root.joinpath(*check_key(key).split("/"))

    def _os_path(self, key: str) -> str:
        """`_path` as a string, for the hot read paths (no pathlib objects)."""
        return os.path.join(self._root_str, check_key(key))

    def _temp_copy(self, path: Path, data: bytes) -> str:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".part")
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        return tmp

    def put_bytes(self, key: str, data: bytes, content_type: str = "application/octet-stream") -> None:
        path = self._path(key)
        try:
            tmp = self._temp_copy(path, data)
            try:
                os.replace(tmp, path)
            finally:
                if os.path.exists(tmp):
                    os.unlink(tmp)
        except OSError as exc:
            raise _local_failure("write", exc) from None

    def put_if_absent(self, key: str, data: bytes,
                      content_type: str = "application/octet-stream") -> bool:
        path = self._path(key)
        if path.exists():
            return False
        try:
            tmp = self._temp_copy(path, data)
            try:
                os.link(tmp, path)  # atomic create-if-absent on POSIX
                return True
            except FileExistsError:
                return False
            finally:
                os.unlink(tmp)
        except OSError as exc:
            raise _local_failure("write", exc) from None

    def get_bytes(self, key: str) -> bytes:
        try:
            with open(self._os_path(key), "rb") as handle:
                return handle.read()
        except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
            raise ObjectNotFound(key) from None
        except OSError as exc:
            raise _local_failure("read", exc) from None

    def exists(self, key: str) -> bool:
        return os.path.isfile(self._os_path(key))

    def list_keys(self, prefix: str = "") -> list[str]:
        keys = []
        folder = prefix.rpartition("/")[0]  # only the folder the prefix names is walked
        start = os.path.join(self._root_str, *folder.split("/")) if folder else self._root_str
        for dirpath, _dirs, files in os.walk(start):
            rel_dir = os.path.relpath(dirpath, self.root)
            for name in files:
                if name.startswith(".tmp-"):
                    continue
                key = name if rel_dir == "." else f"{rel_dir.replace(os.sep, '/')}/{name}"
                if key.startswith(prefix):
                    keys.append(key)
        return sorted(keys)

    def delete(self, key: str) -> None:
        try:
            self._path(key).unlink()
        except FileNotFoundError:
            pass
        except OSError as exc:
            raise _local_failure("delete", exc) from None

    def describe(self) -> str:
        return f"local directory {self.root}"


def parse_s3_url(url: str) -> tuple[str, str]:
    """Split ``s3://bucket/prefix`` into (bucket, prefix without slashes)."""
    if not url.startswith("s3://"):
        raise BadStoreUrl(f"store URL {url!r} must start with s3://")
    bucket, _, prefix = url[len("s3://"):].partition("/")
    if not bucket:
        raise BadStoreUrl(f"store URL {url!r} names no bucket")
    return bucket, prefix.strip("/")


def make_s3_client(endpoint: str | None, region: str, access_key: str | None,
                   secret_key: str | None):
    """A boto3 S3 client with short timeouts and path-style addressing.

    Path-style addressing works with MinIO and SeaweedFS; the short timeouts
    let a job notice an unreachable store quickly and be retried with backoff.
    """
    import boto3
    from botocore.config import Config

    config = Config(signature_version="s3v4", s3={"addressing_style": "path"},
                    connect_timeout=3, read_timeout=20,
                    retries={"max_attempts": 2, "mode": "standard"})
    return boto3.client("s3", endpoint_url=endpoint, region_name=region,
                        aws_access_key_id=access_key, aws_secret_access_key=secret_key,
                        config=config)


class S3Store(ObjectStore):
    """A bucket (optionally a prefix inside it) on an S3-protocol server."""

    def __init__(self, client, bucket: str, prefix: str = "") -> None:
        self.client = client
        self.bucket = bucket
        self.prefix = prefix.strip("/")

    def _key(self, key: str) -> str:
        check_key(key)
        return f"{self.prefix}/{key}" if self.prefix else key

    def _call(self, operation: str, key: str | None, **kwargs):
        from botocore.exceptions import BotoCoreError, ClientError

        try:
            return getattr(self.client, operation)(Bucket=self.bucket, **kwargs)
        except ClientError as exc:
            error = exc.response.get("Error", {})
            code = str(error.get("Code", ""))
            status = int(exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0) or 0)
            if code in ("NoSuchKey", "404", "NotFound") and key is not None:
                raise ObjectNotFound(key) from None
            if status >= 500 or code in ("SlowDown", "ServiceUnavailable", "InternalError"):
                raise StoreUnavailable(f"S3 {operation} failed: {code} (HTTP {status})",
                                       reason=f"S3 answered {code or status}") from exc
            raise
        except BotoCoreError as exc:
            raise StoreUnavailable(f"S3 {operation} failed: {type(exc).__name__}: {exc}",
                                   reason=f"S3 unreachable: {type(exc).__name__}") from exc

    def ensure_bucket(self) -> None:
        """Create the bucket if it does not exist (self-hosted setups)."""
        from botocore.exceptions import ClientError

        try:
            self._call("head_bucket", None)
        except ClientError:
            self._call("create_bucket", None)

    def put_bytes(self, key: str, data: bytes, content_type: str = "application/octet-stream") -> None:
        self._call("put_object", key, Key=self._key(key), Body=data, ContentType=content_type)

    def put_if_absent(self, key: str, data: bytes,
                      content_type: str = "application/octet-stream") -> bool:
        # Content-addressed keys hold the same bytes whoever writes them, so a
        # check-then-put race can only write identical bytes twice.
        if self.exists(key):
            return False
        self.put_bytes(key, data, content_type)
        return True

    def get_bytes(self, key: str) -> bytes:
        response = self._call("get_object", key, Key=self._key(key))
        return response["Body"].read()

    def exists(self, key: str) -> bool:
        try:
            self._call("head_object", key, Key=self._key(key))
        except ObjectNotFound:
            return False
        return True

    def list_keys(self, prefix: str = "") -> list[str]:
        full = (f"{self.prefix}/" if self.prefix else "") + prefix
        keys: list[str] = []
        token = None
        strip = len(self.prefix) + 1 if self.prefix else 0
        while True:
            kwargs = {"Prefix": full}
            if token:
                kwargs["ContinuationToken"] = token
            response = self._call("list_objects_v2", None, **kwargs)
            keys.extend(item["Key"][strip:] for item in response.get("Contents", []))
            if not response.get("IsTruncated"):
                break
            token = response["NextContinuationToken"]
        return sorted(k for k in keys if k.startswith(prefix))

    def delete(self, key: str) -> None:
        self._call("delete_object", key, Key=self._key(key))

    def url_for(self, key: str, expires: int = defaults.PRESIGNED_URL_EXPIRY_S) -> str | None:
        return self.client.generate_presigned_url(
            "get_object", Params={"Bucket": self.bucket, "Key": self._key(key)},
            ExpiresIn=int(expires))

    def describe(self) -> str:
        endpoint = getattr(self.client.meta, "endpoint_url", "")
        return f"s3://{self.bucket}/{self.prefix} at {endpoint}"


def open_store(config) -> ObjectStore:
    """The store named by `config.store` (a `ServiceConfig`)."""
    if config.is_s3:
        bucket, prefix = parse_s3_url(config.store)
        client = make_s3_client(config.s3_endpoint, config.s3_region,
                                config.s3_access_key, config.s3_secret_key)
        return S3Store(client, bucket, prefix)
    return LocalStore(config.store)
