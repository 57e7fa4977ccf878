"""A selector run on the submitter's machine: `selector.py` as a plain subprocess on an /input
tree, its /output/scores.csv checked as the service checks it.

This is no sandbox: the selector runs as the user, with the network and the
machine's memory, under a wall-clock limit only. It answers "does my selector
read this tree and write valid scores?" before a submission spends a run on
the service. The selector finds its folders in `EXPAUDIT_INPUT` and
`EXPAUDIT_OUTPUT` (docs/selector_protocol.md; the service mounts them at
/input and /output). The full package's `expaudit selector run` runs the
service's own sandbox instead (its limits, isolation and checks).
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from expaudit_client.errors import BadScoresFile, ClientError, SelectorNotFound
from expaudit_client.scores_file import SettingIds, check_scores_file
from expaudit_client.selector_files import check_empty_target

SELECTOR_ENTRY = "selector.py"
"""The file a selector directory runs (as on the service)."""

WALL_SECONDS = 300.0
"""Default wall-clock limit: the service's default for a selector run."""

SCORES_FILE = "scores.csv"
SCORES_BYTES = 16 * 1024 * 1024
"""Largest scores.csv the service reads back from /output."""

LOG_TAIL_BYTES = 64 * 1024
"""Bytes of stdout and of stderr kept (the last ones), as the service keeps them."""


@dataclass(frozen=True)
class LocalRun:
    """How a local run ended.

    status: ok, crashed, timeout or output_invalid (the service's names);
    reason: one sentence; exit_code: None when killed at the limit;
    scores: what the checked scores file holds (None unless ok).
    """

    status: str
    reason: str
    exit_code: int | None
    stdout_tail: str
    stderr_tail: str
    wall_seconds: float
    scores: dict | None

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    def to_dict(self) -> dict:
        return {"status": self.status, "reason": self.reason, "exit_code": self.exit_code,
                "stdout_tail": self.stdout_tail, "stderr_tail": self.stderr_tail,
                "wall_seconds": round(self.wall_seconds, 3), "scores": self.scores}


def run_locally(selector_dir: str | Path, input_dir: str | Path, output_dir: str | Path, *,
                wall_seconds: float = WALL_SECONDS, python: str = sys.executable) -> LocalRun:
    """Run `selector_dir/selector.py` with `python` on `input_dir`, writing into `output_dir`
    (absent or empty), and check the scores it wrote against the tree's setting.json."""
    selector_dir, input_dir, output_dir = Path(selector_dir), Path(input_dir), Path(output_dir)
    if not (selector_dir / SELECTOR_ENTRY).is_file():
        raise SelectorNotFound(f"selector '{selector_dir}' has no {SELECTOR_ENTRY}")
    ids = SettingIds.from_input(input_dir)
    check_empty_target(output_dir)
    output_dir.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "EXPAUDIT_INPUT": str(input_dir.resolve()),
           "EXPAUDIT_OUTPUT": str(output_dir.resolve())}
    start = time.monotonic()
    try:
        done = subprocess.run([python, SELECTOR_ENTRY], cwd=selector_dir, env=env,
                              stdin=subprocess.DEVNULL, capture_output=True,
                              timeout=wall_seconds)
    except subprocess.TimeoutExpired as exc:
        return LocalRun("timeout", f"killed at the wall-clock limit of {wall_seconds:g} s",
                        None, _tail(exc.stdout), _tail(exc.stderr), time.monotonic() - start, None)
    seconds = time.monotonic() - start
    out, err = _tail(done.stdout), _tail(done.stderr)
    if done.returncode != 0:
        return LocalRun("crashed", f"selector.py exited with code {done.returncode}",
                        done.returncode, out, err, seconds, None)
    try:
        scores = _check_output(output_dir, ids)
    except ClientError as exc:
        return LocalRun("output_invalid", str(exc), 0, out, err, seconds, None)
    return LocalRun("ok", f"wrote valid scores for {len(ids.scene_ids)} scenes x "
                    f"{len(ids.experience_ids)} experiences", 0, out, err, seconds,
                    scores.to_dict())


def _check_output(output_dir: Path, ids: SettingIds):
    """The scores file a run wrote: a regular file within the size cap, valid for `ids`."""
    path = output_dir / SCORES_FILE
    source = "/output/scores.csv"
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        raise BadScoresFile(f"{source}: the selector wrote no scores file") from None
    if not stat.S_ISREG(info.st_mode):
        raise BadScoresFile(f"{source}: is not a regular file (links, FIFOs and devices are refused)")
    if info.st_size > SCORES_BYTES:
        raise BadScoresFile(f"{source}: is {info.st_size} bytes, over the cap of {SCORES_BYTES}")
    return check_scores_file(path, ids=ids, source=source)


def _tail(data: bytes | None) -> str:
    return (data or b"")[-LOG_TAIL_BYTES:].decode("utf-8", errors="replace")
