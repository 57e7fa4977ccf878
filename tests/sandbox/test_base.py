"""The sandbox interface: spec validation, environment, log tails, exit classification."""

from __future__ import annotations

import signal

import pytest

from expaudit.numerics import cpu_has_avx2
from sandbox import defaults
from sandbox.base import (Limits, RunResult, RunSpec, RunStatus, SandboxConfigError,
                                 TailBuffer, classify_exit, sandbox_env)
from sandbox.local import directory_digest

LIMITS = Limits(wall_seconds=3, memory_bytes=64 * defaults.MIB, pids=8, cpus=1.5,
                output_bytes=4096)


@pytest.mark.parametrize("field, value", [("wall_seconds", 0), ("memory_bytes", 1024),
                                          ("pids", 0), ("cpus", float("nan")),
                                          ("output_bytes", True), ("tmp_bytes", "big")])
def test_limits_reject_bad_values(field, value):
    with pytest.raises(SandboxConfigError, match=f"limits field '{field}': value .* must be a"):
        Limits(**{field: value})


def test_limits_cpu_count_rounds_up():
    assert LIMITS.cpu_count == 2 and Limits(cpus=0.25).cpu_count == 1


def test_run_spec_validation(tmp_path):
    with pytest.raises(SandboxConfigError, match="field 'image': value '' is empty"):
        RunSpec(image="", input_dir=tmp_path, output_dir=tmp_path)
    with pytest.raises(SandboxConfigError, match="field 'command': value \\(\\) must be"):
        RunSpec(image="x", input_dir=tmp_path, output_dir=tmp_path, command=())
    with pytest.raises(SandboxConfigError, match="field 'env': name 'PATH' is not an allowed"):
        RunSpec(image="x", input_dir=tmp_path, output_dir=tmp_path, env={"PATH": "/evil"})
    with pytest.raises(SandboxConfigError, match="field 'env': name 'lower' is not an allowed"):
        RunSpec(image="x", input_dir=tmp_path, output_dir=tmp_path, env={"lower": "1"})
    with pytest.raises(SandboxConfigError, match="field 'env': value of 'SEED' must be text"):
        RunSpec(image="x", input_dir=tmp_path, output_dir=tmp_path, env={"SEED": 3})


def test_sandbox_env_is_built_from_nothing(tmp_path, monkeypatch):
    monkeypatch.setenv("EXPAUDIT_ADMIN_TOKEN", "secret")
    spec = RunSpec(image="x", input_dir=tmp_path, output_dir=tmp_path, limits=LIMITS,
                   env={"SEED": "3"})
    env = sandbox_env(spec)
    assert "EXPAUDIT_ADMIN_TOKEN" not in env and "secret" not in env.values()
    assert env["EXPAUDIT_INPUT"] == "/input" and env["EXPAUDIT_OUTPUT"] == "/output"
    assert env["OMP_NUM_THREADS"] == "2" and env["SEED"] == "3" and env["HOME"] == "/tmp"
    if cpu_has_avx2():  # the kernels the service computes with
        assert env["OPENBLAS_CORETYPE"] == "Haswell" and env["ATEN_CPU_CAPABILITY"] == "avx2"


def test_tail_buffer_keeps_last_bytes():
    tail = TailBuffer(cap=10)
    tail.feed(b"0123456789")
    assert tail.text() == "0123456789"
    tail.feed(b"abcdef")
    assert tail.text() == "[... 6 earlier bytes dropped ...]\n6789abcdef"
    tail.feed(b"\xff")
    assert tail.text().endswith("\ufffd")


@pytest.mark.parametrize("kwargs, status, reason", [
    ({"exit_code": 0}, RunStatus.OK, "exited 0"),
    ({"exit_code": None, "timed_out": True}, RunStatus.TIMEOUT,
     "killed at the wall-clock limit of 3 s"),
    ({"exit_code": 0, "output_full": True}, RunStatus.OUTPUT_LIMIT,
     "/output reached its size cap of 4096 bytes"),
    ({"exit_code": -signal.SIGXFSZ}, RunStatus.OUTPUT_LIMIT, "/output reached its size cap"),
    ({"exit_code": -signal.SIGXCPU}, RunStatus.TIMEOUT,
     "killed at the CPU-time limit of 1.5 CPUs x 3 s"),
    ({"exit_code": 1, "stderr_tail": "Traceback\nMemoryError\n"}, RunStatus.OOM,
     f"ran out of its memory limit of {64 * defaults.MIB} bytes (last error line: MemoryError)"),
    ({"exit_code": 137, "oom_killed": True}, RunStatus.OOM, "ran out of its memory limit"),
    ({"exit_code": 1, "stderr_tail": "BlockingIOError: [Errno 11] Resource temporarily "
                                     "unavailable"}, RunStatus.PIDS_LIMIT,
     "could not start a process or thread: pids limit of 8 reached"),
    ({"exit_code": -signal.SIGSEGV}, RunStatus.CRASHED, "killed by signal SIGSEGV"),
    ({"exit_code": 2, "stderr_tail": "ValueError: bad\n"}, RunStatus.CRASHED,
     "exited with code 2 (last error line: ValueError: bad)"),
    ({"exit_code": None}, RunStatus.CRASHED, "ended without an exit status"),
])
def test_classify_exit(kwargs, status, reason):
    got_status, got_reason = classify_exit(limits=LIMITS, **{"timed_out": False, **kwargs})
    assert got_status is status
    assert got_reason.startswith(reason)


def test_run_result_to_dict():
    result = RunResult(RunStatus.OK, "exited 0", 0, "out", "err", 1.23456, "sha256:ab")
    assert result.ok
    assert result.to_dict() == {"status": "ok", "reason": "exited 0", "exit_code": 0,
                                "stdout_tail": "out", "stderr_tail": "err",
                                "wall_seconds": 1.235, "image_digest": "sha256:ab"}


def test_directory_digest_tracks_content_and_exec_bit(tmp_path):
    (tmp_path / "selector.py").write_text("print(1)\n")
    first = directory_digest(tmp_path)
    assert first.startswith("sha256:") and len(first) == 71
    assert directory_digest(tmp_path) == first
    (tmp_path / "selector.py").chmod(0o755)
    second = directory_digest(tmp_path)
    (tmp_path / "selector.py").write_text("print(2)\n")
    assert len({first, second, directory_digest(tmp_path)}) == 3


def test_sandbox_errors_share_one_base():
    """Settings, cgroups and /input data fail with the sandbox's own errors: one `except
    SandboxError` catches them, and each is still the built-in it stands for."""
    import errno

    from sandbox.base import SandboxError
    from sandbox.cgroups import CgroupError
    from sandbox.protocol import ProtocolError

    for error, builtin in ((SandboxConfigError, ValueError), (CgroupError, OSError),
                           (ProtocolError, ValueError)):
        assert issubclass(error, SandboxError) and issubclass(error, builtin), error
    with pytest.raises(SandboxError) as caught:
        raise CgroupError(errno.EBUSY, "cannot remove the run's cgroup: busy")
    assert (caught.value.errno, caught.value.strerror) == (errno.EBUSY,
                                                          "cannot remove the run's cgroup: busy")
