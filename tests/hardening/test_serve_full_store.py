"""Issue 30, item 4: `/healthz` must say 503 when the store's file system is full.

The writability probe wrote an empty object; on a full file system an empty file still
fits (an inode, no block), so health answered 200 while every submission got 503 "no space
left". Here the local store lives on a small tmpfs of its own (mounted for the test; root
only), filled to the last block: `/healthz` must answer 503 naming the store, and 200 again
once space is freed.
"""

from __future__ import annotations

import contextlib
import errno
import os
import subprocess
from pathlib import Path

import pytest

from tests.support.servers import make_app


@contextlib.contextmanager
def small_tmpfs(directory: Path, size: str = "2m"):
    """A tmpfs of `size` mounted on `directory` (skips the test where mounting is refused)."""
    directory.mkdir(parents=True, exist_ok=True)
    if os.geteuid() != 0:
        pytest.skip("mounting a small file system needs root")
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size},mode=0755", "tmpfs",
                              str(directory)], capture_output=True, text=True)
    if mounted.returncode != 0:
        pytest.skip(f"tmpfs could not be mounted: {mounted.stderr.strip()}")
    try:
        yield directory
    finally:
        subprocess.run(["umount", "-l", str(directory)], check=True)


def fill(directory: Path) -> Path:
    """Write `directory`'s file system full (a file that grows until ENOSPC); returns it."""
    ballast = directory / "ballast"
    chunk = b"\0" * 65536
    with open(ballast, "wb", buffering=0) as handle:
        for size in (65536, 4096, 1):
            while True:
                try:
                    handle.write(chunk[:size])
                except OSError as exc:
                    if exc.errno != errno.ENOSPC:
                        raise
                    break
    return ballast


def test_healthz_is_503_when_the_store_file_system_is_full(tmp_path, redis_conn):
    from service.store.storage import LocalStore

    with small_tmpfs(tmp_path / "disk") as disk:
        store = LocalStore(disk / "store")
        client = make_app(store, redis_conn).test_client()
        assert client.get("/healthz").status_code == 200
        ballast = fill(disk)
        with pytest.raises(OSError):  # the file system really is full
            (disk / "one-more-byte").write_bytes(b"x")
        # a fresh app: the last success is not remembered (a process restarted on a full disk)
        full = make_app(store, redis_conn).test_client().get("/healthz")
        assert full.status_code == 503, full.json
        assert full.json["store"] == "unavailable: not writable: no space left"
        assert str(disk) not in full.get_data(as_text=True)
        ballast.unlink()
        assert make_app(store, redis_conn).test_client().get("/healthz").status_code == 200


def test_the_write_probe_is_not_empty(tmp_path):
    """The object `/healthz` writes holds bytes (an empty probe proves nothing on a full disk)."""
    from service.store.storage import LocalStore

    written = {}

    class Recording(LocalStore):
        def put_bytes(self, key, data, content_type="application/octet-stream"):
            written[key] = bytes(data)
            super().put_bytes(key, data, content_type)

    store = Recording(tmp_path / "store")
    store.check_writable("healthz/probe-1")
    assert len(written["healthz/probe-1"]) >= 1
    assert not store.exists("healthz/probe-1")
