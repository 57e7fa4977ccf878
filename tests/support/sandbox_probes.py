"""Host-side bait for the sandbox tests (local and container backends): what a selector must not reach."""

from __future__ import annotations

import contextlib
import socket
import threading
from pathlib import Path


@contextlib.contextmanager
def watched_listener(host: str):
    """A TCP socket listening on `host` (a free port) that accepts in a thread until the block ends.

    Yields (port, accepted): `accepted` lists every connection made, for tests that
    a sandboxed process cannot reach the host.
    """
    server = socket.socket()
    server.bind((host, 0))
    server.listen()
    server.settimeout(0.2)
    accepted, done = [], threading.Event()

    def accept() -> None:
        while not done.is_set():
            try:
                accepted.append(server.accept())
            except TimeoutError:
                continue

    watcher = threading.Thread(target=accept)
    watcher.start()
    try:
        yield server.getsockname()[1], accepted
    finally:
        done.set()
        watcher.join()
        server.close()


def outcome_secret(tmp_path: Path) -> tuple[str, Path]:
    """A frozen outcome file under `tmp_path`, readable on the host by anyone: (its secret, its path).

    Only the sandbox may hide it from a selector.
    """
    data_dir = tmp_path / "benchmark_data" / "frozen"
    data_dir.mkdir(parents=True)
    secret = "OUTCOME-SECRET-7f3a9c"
    secret_file = data_dir / "outcomes.csv"
    secret_file.write_text(f"experience_id,scene_id,seed,success\n{secret},q,0,1\n")
    secret_file.chmod(0o644)
    for parent in (data_dir, data_dir.parent, tmp_path):
        parent.chmod(0o755)
    return secret, secret_file
