"""The Docker backend's container spec and its handling of engine failures.

There is no Docker engine on the test machines. What is tested is our own
code: the container spec `container_spec` builds (also passed through the
real `docker` SDK's HostConfig, which maps it to the Engine API fields), and
how `DockerSandbox` reacts to each answer an engine can give. For the latter
a tiny recording client object stands in for the engine's replies; it is
test scaffolding for our spec-building and error handling, not a replacement
for a part a user runs (users run the real engine through `docker.from_env()`).
"""

from __future__ import annotations

import pytest

docker = pytest.importorskip("docker")
from docker.models.containers import _create_container_args  # noqa: E402
from requests.exceptions import ReadTimeout  # noqa: E402

from runner.sandbox import defaults  # noqa: E402
from runner.sandbox.base import Limits, RunSpec, RunStatus, SandboxConfigError  # noqa: E402
from runner.sandbox.docker_backend import DockerSandbox, container_spec  # noqa: E402

DIGEST = "sha256:" + "ab" * 32
LIMITS = Limits(wall_seconds=5, memory_bytes=512 * defaults.MIB, pids=32, cpus=1.5,
                output_bytes=8 * defaults.MIB, tmp_bytes=16 * defaults.MIB)


@pytest.fixture
def spec(tmp_path):
    (tmp_path / "in").mkdir()
    (tmp_path / "out").mkdir()
    return RunSpec(image="raw32-selector:1", input_dir=tmp_path / "in",
                   output_dir=tmp_path / "out", limits=LIMITS)


class RecordingContainer:
    """Answers like an engine's container would; records every call."""

    def __init__(self, client, exit_code=0, wait_error=None, oom=False, logs=(b"", b""),
                 start_error=None, on_start=None):
        self.client, self.exit_code, self.wait_error = client, exit_code, wait_error
        self.on_start = on_start
        self.attrs = {"State": {"OOMKilled": oom}}
        self.log_bytes, self.start_error = logs, start_error

    def start(self):
        self.client.calls.append("start")
        if self.start_error:
            raise self.start_error
        if self.on_start:
            self.on_start()  # what the selector would write through the /output bind mount

    def wait(self, timeout):
        self.client.calls.append(("wait", timeout))
        if self.wait_error:
            raise self.wait_error
        return {"StatusCode": self.exit_code}

    def kill(self):
        self.client.calls.append("kill")

    def reload(self):
        self.client.calls.append("reload")

    def logs(self, stdout, stderr):
        return self.log_bytes[0] if stdout else self.log_bytes[1]

    def remove(self, force):
        self.client.calls.append(("remove", force))


class RecordingClient:
    """The two collections `DockerSandbox` uses: images.get and containers.create."""

    def __init__(self, image_error=None, create_error=None, repo_digests=(), **container):
        self.calls, self.created = [], []
        self.image_error, self.create_error = image_error, create_error
        self.repo_digests, self.container = list(repo_digests), container
        self.images, self.containers = self, self

    def get(self, reference):
        self.calls.append(("images.get", reference))
        if self.image_error:
            raise self.image_error
        return type("Image", (), {"id": DIGEST, "attrs": {"RepoDigests": self.repo_digests}})()

    def create(self, **kwargs):
        self.calls.append("create")
        if self.create_error:
            raise self.create_error
        self.created.append(kwargs)
        return RecordingContainer(self, **self.container)


def test_container_spec_locks_the_container_down(spec):
    built = container_spec(spec, DIGEST)
    assert built["image"] == DIGEST and built["command"] is None
    assert built["user"] == "65534:65534" and built["network_mode"] == "none"
    assert built["read_only"] is True and built["cap_drop"] == ["ALL"]
    assert built["security_opt"] == ["no-new-privileges:true"]
    assert built["tmpfs"] == {"/tmp": f"rw,nosuid,nodev,noexec,size={16 * defaults.MIB}"}
    assert built["mem_limit"] == built["memswap_limit"] == 512 * defaults.MIB
    assert built["nano_cpus"] == 1_500_000_000 and built["pids_limit"] == 32
    assert {"name": "fsize", "soft": 8 * defaults.MIB, "hard": 8 * defaults.MIB} in built["ulimits"]
    assert built["volumes"] == {str(spec.input_dir): {"bind": "/input", "mode": "ro"},
                                str(spec.output_dir): {"bind": "/output", "mode": "rw"}}
    assert built["environment"]["EXPAUDIT_INPUT"] == "/input"
    assert "device_requests" not in built


def test_container_spec_maps_to_engine_fields_through_the_sdk(spec, tmp_path):
    gpu = RunSpec(image="x", input_dir=spec.input_dir, output_dir=spec.output_dir,
                  limits=Limits(gpu=True), command=("python", "/selector/selector.py"))
    created = _create_container_args({**container_spec(gpu, DIGEST), "version": "1.45"})
    host = created["host_config"]
    assert host["NetworkMode"] == "none" and host["ReadonlyRootfs"] is True
    assert host["CapDrop"] == ["ALL"] and host["SecurityOpt"] == ["no-new-privileges:true"]
    assert host["PidsLimit"] == defaults.PIDS and host["Memory"] == defaults.MEMORY_BYTES
    assert host["NanoCpus"] == int(defaults.CPUS * 1e9) and host["Init"] is True
    assert host["DeviceRequests"] == [{"Driver": "", "Count": -1, "DeviceIDs": [],
                                       "Capabilities": [["gpu"]], "Options": {}}]
    assert f"{spec.input_dir}:/input:ro" in host["Binds"]
    assert created["command"] == ["python", "/selector/selector.py"]
    assert created["user"] == "65534:65534"


def test_successful_run_pins_image_and_cleans_up(spec):
    client = RecordingClient(repo_digests=[f"registry/raw32@{DIGEST.replace('ab', 'cd')}"],
                             logs=(b"scored 200 scenes\n", b""))
    result = DockerSandbox(client).run(spec)
    assert result.status is RunStatus.OK and result.exit_code == 0
    assert result.image_digest == DIGEST.replace("ab", "cd")
    assert result.stdout_tail == "scored 200 scenes\n"
    assert client.created[0]["image"] == DIGEST  # runs the content id, not the tag
    assert client.calls == [("images.get", "raw32-selector:1"), "create", "start",
                            ("wait", 5), "reload", ("remove", True)]


def test_wall_clock_limit_kills_the_container(spec):
    client = RecordingClient(wait_error=ReadTimeout("read timed out"), exit_code=None)
    result = DockerSandbox(client).run(spec)
    assert result.status is RunStatus.TIMEOUT
    assert result.reason == "killed at the wall-clock limit of 5 s"
    assert "kill" in client.calls and client.calls[-1] == ("remove", True)


def test_oom_killed_container_is_reported(spec):
    client = RecordingClient(exit_code=137, oom=True)
    result = DockerSandbox(client).run(spec)
    assert result.status is RunStatus.OOM and result.exit_code == -9
    assert result.reason == f"ran out of its memory limit of {512 * defaults.MIB} bytes"


def test_crash_keeps_the_stderr_tail(spec):
    client = RecordingClient(exit_code=2, logs=(b"", b"x" * 70000 + b"\nValueError: no\n"))
    result = DockerSandbox(client).run(spec)
    assert result.status is RunStatus.CRASHED
    assert result.reason == "exited with code 2 (last error line: ValueError: no)"
    assert len(result.stderr_tail) < defaults.LOG_TAIL_BYTES + 100


def test_engine_failures_become_setup_failed(spec):
    missing = RecordingClient(image_error=docker.errors.ImageNotFound("no such image"))
    result = DockerSandbox(missing).run(spec)
    assert result.status is RunStatus.SETUP_FAILED
    assert result.reason == "image 'raw32-selector:1' is not on this runner"
    refused = RecordingClient(create_error=docker.errors.APIError("bad", explanation="no tmpfs"))
    result = DockerSandbox(refused).run(spec)
    assert result.reason == "the Docker engine refused the container: no tmpfs"
    assert result.image_digest == DIGEST
    broken = RecordingClient(start_error=docker.errors.APIError("x", explanation="cgroup error"))
    result = DockerSandbox(broken).run(spec)
    assert result.status is RunStatus.SETUP_FAILED
    assert result.reason == "the Docker engine failed during the run: cgroup error"
    assert broken.calls[-1] == ("remove", True)


def test_gpu_only_when_allowed(spec):
    gpu_spec = RunSpec(image="x", input_dir=spec.input_dir, output_dir=spec.output_dir,
                       limits=Limits(gpu=True))
    client = RecordingClient()
    result = DockerSandbox(client).run(gpu_spec)
    assert result.status is RunStatus.SETUP_FAILED
    assert result.reason == "the run asks for a GPU and this runner gives none"
    assert client.calls == []
    DockerSandbox(client, allow_gpu=True).run(gpu_spec)
    assert client.created[0]["device_requests"] == [{"count": -1, "capabilities": [["gpu"]]}]


def test_output_filled_to_cap_is_reported(spec):
    def fill():
        (spec.output_dir / "scores.csv").write_bytes(b"x" * LIMITS.output_bytes)

    client = RecordingClient(exit_code=1, on_start=fill,
                             logs=(b"", b"OSError: [Errno 27] File too large\n"))
    result = DockerSandbox(client).run(spec)
    assert result.status is RunStatus.OUTPUT_LIMIT
    assert result.reason == (f"/output reached its size cap of {8 * defaults.MIB} bytes "
                             f"(last error line: OSError: [Errno 27] File too large)")


def test_non_empty_output_dir_is_refused(spec):
    (spec.output_dir / "left-over.csv").write_text("x")
    with pytest.raises(SandboxConfigError, match="field 'output_dir'.*must be an existing empty"):
        DockerSandbox(RecordingClient()).run(spec)


def test_pinned_reference_records_its_digest(spec):
    pinned = RunSpec(image=f"registry/raw32@{DIGEST}", input_dir=spec.input_dir,
                     output_dir=spec.output_dir, limits=LIMITS)
    result = DockerSandbox(RecordingClient()).run(pinned)
    assert result.image_digest == DIGEST
