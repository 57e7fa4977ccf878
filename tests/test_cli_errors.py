"""Bad input to the `expaudit` command: one line on stderr naming what was wrong, exit status 2, no traceback."""

from __future__ import annotations

import pytest

from expaudit.cli import main
from tests.servers import free_port


def _fails(capsys, argv: list[str], *expected: str) -> str:
    status = main(argv)
    err = capsys.readouterr().err
    assert status == 2, err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    for text in expected:
        assert text in err, err
    return err


def _refused_by_argparse(capsys, argv: list[str], *expected: str) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    err = capsys.readouterr().err
    assert exit_info.value.code == 2
    for text in expected:
        assert text in err, err


def test_data_commands_name_the_bad_setting_root_or_count(capsys, tmp_path):
    _fails(capsys, ["data", "export", "nosuch", str(tmp_path / "out")], "unknown setting 'nosuch'")
    _fails(capsys, ["data", "manifest", "--root", str(tmp_path / "absent")], "is not a directory")
    _fails(capsys, ["data", "images", "nosuch-set"], "unknown query set(s) ['nosuch-set']")
    _fails(capsys, ["data", "verify", "--sample", "0"], "nothing to verify")
    _fails(capsys, ["data", "verify", "--sample", "1", "--root", str(tmp_path)], "no stored Replay cells")
    _refused_by_argparse(capsys, ["data", "verify", "--sample", "-1"], "--sample", "non-negative")
    _refused_by_argparse(capsys, ["data", "evaluate-policy", "policy", "stack-e000", "--limit", "0"],
                         "--limit", "positive")
    _refused_by_argparse(capsys, ["data"], "expaudit data", "ACTION")
    _refused_by_argparse(capsys, ["token"], "expaudit token", "ACTION")


def test_client_commands_say_the_server_cannot_be_reached(capsys, tmp_path):
    server = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    _fails(capsys, ["status", "sub-x", "--server", server, "--token", "t"], f"cannot reach {server}")
    _fails(capsys, ["token", "create", "--name", "x", "--server", server, "--token", "t"], "cannot reach")
    _fails(capsys, ["submit", str(tmp_path / "nosuch.csv"), "--setting", "stack-replay-k3-orig",
                    "--server", server, "--token", "t"], "No such file or directory", "nosuch.csv")


def test_service_commands_name_a_bad_redis_url(capsys, tmp_path):
    _fails(capsys, ["worker", "--burst", "--redis-url", "notaurl", "--store", str(tmp_path / "store")],
           "--redis-url 'notaurl'")
    _fails(capsys, ["reconcile", "--redis-url", "notaurl", "--store", str(tmp_path / "store")],
           "--redis-url 'notaurl'")


def test_a_burst_worker_fails_at_once_when_redis_is_unreachable(capsys, tmp_path):
    url = f"redis://127.0.0.1:{free_port()}/0"  # nothing listens there
    _fails(capsys, ["worker", "--burst", "--redis-url", url, "--store", str(tmp_path / "store")],
           "expaudit worker: error:")
