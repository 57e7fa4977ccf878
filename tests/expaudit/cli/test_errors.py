"""Bad input to the `expaudit` command: one line on stderr naming what was wrong, exit status 2, no traceback."""

from __future__ import annotations

import pytest

from expaudit import errors
from expaudit.cli import audit as audit_command
from expaudit.cli import main
from tests.support.servers import free_port


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
    _fails(capsys, ["token", "create", "--name", "x", "--owner", "x", "--server", server, "--token", "t"], "cannot reach")
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


def test_a_bad_server_url_is_one_line(capsys):
    _fails(capsys, ["status", "sub-x", "--server", "notaurl", "--token", "t"],
           "'notaurl' is not a server URL: it has no scheme; give http://notaurl")


def test_redis_that_does_not_answer_is_named_without_its_password(capsys, tmp_path):
    port = free_port()  # nothing listens there
    _fails(capsys, ["worker", "--burst", "--redis-url", f"redis://127.0.0.1:{port}/0",
                    "--store", str(tmp_path / "store")],
           f"cannot use Redis at redis://127.0.0.1:{port}/0")
    err = _fails(capsys, ["worker", "--burst", "--redis-url", f"redis://:hunter2@127.0.0.1:{port}/0",
                          "--store", str(tmp_path / "store")],
                 f"cannot use Redis at redis://:***@127.0.0.1:{port}/0")
    assert "hunter2" not in err
    err = _fails(capsys, ["worker", "--burst", "--redis-url", "http://:hunter2@127.0.0.1/0",
                          "--store", str(tmp_path / "store")], "--redis-url")
    assert "hunter2" not in err


def _user_errors():
    from leaderboard.errors import InputError
    from sandbox.base import SandboxConfigError
    from expaudit_client import ApiError, BadServerUrl, ServerUnreachable
    from service.process.config import ConfigError
    from service.store.storage import InvalidKey
    from service.process.redis_errors import RedisUnreachable

    return [
        errors.InvalidInput("a field breaks its format"),
        errors.UnknownName("unknown rule 'nosuch'"),
        errors.DataNotFound("no frozen data for 'stack-e000'"),
        errors.Unreachable("the server does not answer"),
        InputError("scores.csv", "is not a finite number", line=3, field="score", value="nan"),
        ConfigError("EXPAUDIT_SANDBOX must be one of ['local']"),
        InvalidKey("invalid object key '../x'"),
        ApiError(422, "invalid", "format must be one of ['csv']", "format"),
        BadServerUrl("'x' is not a server URL"),
        ServerUnreachable("cannot reach http://127.0.0.1:1/: is the server running"),
        RedisUnreachable("cannot use Redis at redis://127.0.0.1:1/0: refused"),
        SandboxConfigError("run spec field 'image': value '' is empty"),
        FileNotFoundError(2, "No such file or directory", "nosuch.csv"),
    ]


@pytest.mark.parametrize("error", _user_errors(), ids=lambda error: type(error).__name__)
def test_every_kind_of_user_error_is_one_line_and_status_2(capsys, monkeypatch, error):
    """The command catches the tree's `UserError` (and OSError), whatever module raised it."""
    def handler(args):
        raise error

    monkeypatch.setattr(audit_command, "run_audit_command", handler)
    err = _fails(capsys, ["audit", "--experiences", "e", "--outcomes", "o", "--scenes", "s",
                          "--scores", "x"], "expaudit audit: error: ")
    assert " ".join(str(error).split()) in err


def _bugs():
    from service.selectors.run import SandboxUnavailable
    from service.store.storage import StoreUnavailable

    return [errors.InternalError("a job's machinery failed"),
            StoreUnavailable("local store write failed: EIO"),
            SandboxUnavailable("the sandbox could not be built"),
            errors.ExpauditError("raised on purpose, but no user error"),
            ValueError("a bug"), KeyError("a bug"), RuntimeError("a bug")]


@pytest.mark.parametrize("error", _bugs(), ids=lambda error: type(error).__name__)
def test_an_error_that_is_not_the_users_keeps_its_traceback(capsys, monkeypatch, error):
    def handler(args):
        raise error

    monkeypatch.setattr(audit_command, "run_audit_command", handler)
    with pytest.raises(type(error)) as raised:
        main(["audit", "--experiences", "e", "--outcomes", "o", "--scenes", "s", "--scores", "x"])
    assert raised.value is error
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize("module, name, argv", [
    ("expaudit.cli.data_sim_handlers", "verify_sample", ["data", "verify", "--sample", "1"]),
    ("expaudit.cli.data_sim_handlers", "evaluate_policy", ["data", "evaluate-policy", "policy", "stack-e000"]),
    ("expaudit.cli.runner_handlers", "policy_options",
     ["runner", "--redis-url", "redis://127.0.0.1:1", "--frozen-root", "."]),
])
def test_a_bug_inside_a_data_or_runner_command_keeps_its_traceback(monkeypatch, module, name, argv):
    """Only the tree's user errors become one line and exit 2: a built-in ValueError or
    KeyError raised by the project's own code is a bug and propagates."""
    import importlib

    pytest.importorskip("robosuite")  # the data and runner handlers load the simulator
    pytest.importorskip("torch")

    def broken(*args, **kwargs):
        raise KeyError("a bug") if name == "evaluate_policy" else ValueError("a bug")

    monkeypatch.setattr(importlib.import_module(module), name, broken)
    with pytest.raises((ValueError, KeyError), match="a bug"):
        main(argv)


def test_training_never_replaces_the_policies_published_cells_were_made_with(capsys, monkeypatch):
    """Training asked to write into the published root is refused before any training, with or
    without --force."""
    import expaudit.cli.data_sim_handlers as handlers
    from benchmark_data.paths import FROZEN_ROOT

    trained = []
    monkeypatch.setattr(handlers, "train_one", trained.append)
    one = ["--task", "stack", "--mechanism", "policy", "--experience", "stack-e000"]
    _fails(capsys, ["data", "train-policies", "--out", str(FROZEN_ROOT), *one], "is the published root")
    _fails(capsys, ["data", "train-policies", "--out", str(FROZEN_ROOT), "--force", *one],
           "is the published root")
    assert trained == []


def test_training_trains_anew_a_policy_of_the_retired_mechanism(tmp_path, monkeypatch):
    """A staging root's policy of mechanism 1 (its spec.json names no version) counts as not
    trained, so the run replaces it; a mechanism-2 policy there is kept without --force."""
    import json

    import expaudit.cli.data_sim_handlers as handlers
    from benchmark_data.policy_files import policy_dir

    trained = []
    monkeypatch.setattr(handlers, "train_one", trained.append)
    for eid, spec in (("stack-e000", {"train_steps": 6000}), ("stack-e001", {"policy_mechanism": 2})):
        directory = policy_dir("policy", eid, tmp_path)
        directory.mkdir(parents=True)
        (directory / "spec.json").write_text(json.dumps(spec))
        for name in ("weights.pt", "training.json"):
            (directory / name).write_text("{}")
    assert main(["data", "train-policies", "--task", "stack", "--mechanism", "policy", "--workers", "1",
                 "--experience", "stack-e000", "stack-e001", "--out", str(tmp_path)]) == 0
    assert [job[:3] for job in trained] == [("stack", "policy", "stack-e000")]
