"""The test engine's own guard rails (tests/support/engine): when it skips, and why."""

from __future__ import annotations

import pytest

from tests.support.engine import podman


def test_missing_packages_without_root_name_the_reason(monkeypatch):
    monkeypatch.setattr(podman, "_find", lambda command: None if command == "runc" else "/x")
    monkeypatch.setattr(podman.os, "geteuid", lambda: 1000)
    with pytest.raises(podman.EngineUnavailable, match="packages runc are missing and installing "
                                                       "them .* needs root"):
        podman.ensure_packages(print)


def test_nothing_to_install_when_every_command_is_there(monkeypatch):
    monkeypatch.setattr(podman, "_find", lambda command: f"/usr/bin/{command}")
    monkeypatch.setattr(podman.os, "geteuid", lambda: 1000)
    podman.ensure_packages(print)  # no root needed, nothing raised


def test_the_reason_is_given_again_to_every_later_test(monkeypatch):
    monkeypatch.setattr(podman, "_SHARED", {})
    monkeypatch.setattr(podman, "ensure_packages",
                        lambda log: (_ for _ in ()).throw(podman.EngineUnavailable("no apt-get")))
    for _ in range(2):
        with pytest.raises(podman.EngineUnavailable, match="no apt-get"):
            podman.shared_engine(print)
