"""Pytest helpers for tests that need the container engine.

`engine_or_skip` returns the process-wide engine (tests.support.engine.podman) or
skips with the reason an engine cannot be started; `reporter_log` prints set-up
times and measurements past pytest's output capture; `build_image` builds
with the podman CLI on the engine's store (layers cached between runs).
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from tests.support.engine.podman import Engine, EngineUnavailable, shared_engine


def reporter_log(config):
    """A `log(message)` that writes a line to the terminal even while output is captured."""
    reporter = config.pluginmanager.getplugin("terminalreporter")
    capture = config.pluginmanager.getplugin("capturemanager")

    def log(message: str) -> None:
        if reporter is None or capture is None:
            print(message)
            return
        with capture.global_and_fixture_disabled():
            reporter.write_line(f"[engine] {message}")

    return log


def engine_or_skip(config) -> Engine:
    """The engine, or a skip that says why none can be started on this machine
    (a failure instead where EXPAUDIT_REQUIRE_ENGINE=1 says one must be)."""
    try:
        return shared_engine(reporter_log(config))
    except EngineUnavailable as exc:
        if os.environ.get("EXPAUDIT_REQUIRE_ENGINE") == "1":
            pytest.fail(f"EXPAUDIT_REQUIRE_ENGINE=1 and no container engine started: {exc}")
        pytest.skip(f"no container engine can be started here: {exc}")


def build_image(engine: Engine, context: Path, tag: str, log, *, target: str | None = None,
                dockerfile: Path | None = None, build_args: dict[str, str] | None = None,
                timeout: float = 1500) -> str:
    """Build an image with the engine (cached layers reused); returns its id."""
    args = ["build", "--pull=never", "-t", tag]
    if target:
        args += ["--target", target]
    if dockerfile:
        args += ["-f", str(dockerfile)]
    for key, value in (build_args or {}).items():
        args += ["--build-arg", f"{key}={value}"]
    started = time.monotonic()
    engine.podman(*args, str(context), timeout=timeout, nice=True)
    log(f"built {tag}{f' (target {target})' if target else ''} in {time.monotonic() - started:.0f} s")
    return engine.podman("image", "inspect", "--format", "{{.Id}}", tag).stdout.strip()
