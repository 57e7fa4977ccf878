"""Fixtures of the web tests shared across modules."""

from __future__ import annotations

import pytest

from tests.support.readout_service import readout_root


@pytest.fixture()
def readout(tmp_path, monkeypatch):
    """A readout frozen root and sealed directory under `tmp_path`, named by the environment
    variables the app reads; the dict of their paths."""
    files = readout_root(tmp_path / "readout")
    monkeypatch.setenv("EXPAUDIT_FROZEN_ROOT", str(files["frozen"]))
    monkeypatch.setenv("EXPAUDIT_READOUT_SEALED", str(files["sealed_dir"]))
    return files
