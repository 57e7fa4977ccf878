"""The Docker backend against a real engine: selectors run as sibling containers.

The engine is Podman serving the Docker API (tests/support/engine/podman.py), the
client is the real `docker` SDK on its socket, and the images are built from
the example selectors' own Dockerfiles and from the hostile selectors of the
local-backend tests (tests/hostile_selectors). Each hostile selector runs in
its own test; each such test then checks that no selector container is left
and that a normal selector still runs right after it.

What an engine here cannot show is a GPU (no NVIDIA runtime): only the
mapping of a GPU request to the engine's device request is checked, through
the SDK's own argument builder and a recording client (the last test).
"""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import numpy as np
import pytest

docker = pytest.importorskip("docker")
from docker.models.containers import _create_container_args  # noqa: E402

from sandbox import defaults  # noqa: E402
from sandbox.base import Limits, RunSpec, RunStatus, SandboxConfigError  # noqa: E402
from sandbox.docker_backend import DockerSandbox, container_spec, run_user  # noqa: E402
from sandbox.execute import run_selector  # noqa: E402
from tests.support.engine.fixtures import build_image, engine_or_skip, reporter_log  # noqa: E402
from tests.support.engine.standins import python_base  # noqa: E402
from tests.support.sandbox_probes import outcome_secret, watched_listener  # noqa: E402
from tests.support.paths import REPO_ROOT, HOSTILE_SELECTORS  # noqa: E402

REPO = REPO_ROOT
EXAMPLES = REPO / "examples" / "selectors"
HOSTILE = HOSTILE_SELECTORS
LIMITS = Limits(wall_seconds=5, memory_bytes=256 * defaults.MIB, pids=16, cpus=1,
                output_bytes=8 * defaults.MIB, tmp_bytes=8 * defaults.MIB)
PROBE = """\
import json, os, resource
status = dict(line.split(':', 1) for line in open('/proc/self/status').read().splitlines())
mounts = {fields[1]: fields[3].split(',') for fields in
          (line.split() for line in open('/proc/mounts'))}
def read(*paths):
    for path in paths:
        try:
            return open(path).read().strip()
        except OSError:
            pass
def writable(path):
    try:
        with open(os.path.join(path, 'probe'), 'w'):
            pass
        return True
    except OSError:
        return False
print(json.dumps({
    'uid': os.getuid(), 'gid': os.getgid(), 'groups': os.getgroups(),
    'cap_eff': status['CapEff'].strip(), 'cap_bnd': status['CapBnd'].strip(),
    'no_new_privs': status['NoNewPrivs'].strip(),
    'interfaces': sorted(os.listdir('/sys/class/net')),
    'root_options': mounts['/'], 'tmp_options': mounts['/tmp'],
    'root_writable': writable('/'), 'usr_writable': writable('/usr'),
    'input_writable': writable('/input'), 'tmp_writable': writable('/tmp'),
    'memory': read('/sys/fs/cgroup/memory/memory.limit_in_bytes', '/sys/fs/cgroup/memory.max'),
    'memsw': read('/sys/fs/cgroup/memory/memory.memsw.limit_in_bytes', '/sys/fs/cgroup/memory.swap.max'),
    'pids': read('/sys/fs/cgroup/pids/pids.max', '/sys/fs/cgroup/pids.max'),
    'fsize': resource.getrlimit(resource.RLIMIT_FSIZE)[0],
    'nofile': resource.getrlimit(resource.RLIMIT_NOFILE)[0],
    'core': resource.getrlimit(resource.RLIMIT_CORE)[0],
    'env': sorted(os.environ)}))
"""


# --------------------------------------------------------------- the spec --

def _spec(image: str, input_dir: Path, tmp_path: Path, limits: Limits = LIMITS,
          **kwargs) -> RunSpec:
    out = tmp_path / f"out-{time.monotonic_ns()}"
    out.mkdir()
    return RunSpec(image=image, input_dir=input_dir, output_dir=out, limits=limits, **kwargs)


def test_container_spec_locks_the_container_down(tmp_path):
    (tmp_path / "in").mkdir()
    spec = _spec("raw32-selector:1", tmp_path / "in", tmp_path,
                 limits=Limits(wall_seconds=5, memory_bytes=512 * defaults.MIB, pids=32, cpus=1.5,
                               output_bytes=8 * defaults.MIB, tmp_bytes=16 * defaults.MIB))
    digest = "sha256:" + "ab" * 32
    built = container_spec(spec, digest)
    assert built["image"] == digest and built["command"] is None
    assert built["user"] == "65534:65534" and built["network_mode"] == "none"
    assert built["read_only"] is True and built["cap_drop"] == ["ALL"]
    assert built["security_opt"] == ["no-new-privileges:true"]
    assert built["tmpfs"] == {"/tmp": f"rw,nosuid,nodev,noexec,size={16 * defaults.MIB}"}
    assert built["mem_limit"] == built["memswap_limit"] == 512 * defaults.MIB
    assert built["nano_cpus"] == 1_500_000_000 and built["pids_limit"] == 32
    assert {"name": "fsize", "soft": 8 * defaults.MIB, "hard": 8 * defaults.MIB} in built["ulimits"]
    assert built["volumes"] == {str(spec.input_dir): {"bind": "/input", "mode": "ro"},
                                str(spec.output_dir): {"bind": "/output", "mode": "rw"}}
    assert "device_requests" not in built
    # every limit an engine would otherwise fill with its own default is given
    assert {u["name"] for u in built["ulimits"]} == {"fsize", "nofile", "nproc", "core"}


def test_selector_user_owns_output_and_is_never_root():
    assert run_user(0, 0) == defaults.DOCKER_USER == "65534:65534"  # root never lends its uid
    assert run_user(10001, 10001) == "10001:10001"  # the compose runner's own uid


# ------------------------------------------------------------- the engine --

@pytest.fixture(scope="module")
def engine(request):
    return engine_or_skip(request.config)


@pytest.fixture(scope="module")
def client(engine):
    client = engine.docker_client()
    yield client
    client.close()


@pytest.fixture(scope="module")
def images(engine, request, tmp_path_factory):
    """name -> tag: the example selectors from their own Dockerfiles, the hostile ones, a probe."""
    log = reporter_log(request.config)
    python_base(engine, log)
    tags = {}
    for name in ("raw32", "object-proximity"):
        tags[name] = f"localhost/expaudit-test/{name}:1"
        build_image(engine, EXAMPLES / name, tags[name], log)
    context = tmp_path_factory.mktemp("hostile-image")
    shutil.copytree(HOSTILE, context / "hostile", ignore=shutil.ignore_patterns("*.md"))
    (context / "hostile" / "probe").mkdir()
    (context / "hostile" / "probe" / "selector.py").write_text(PROBE)
    (context / "Containerfile").write_text(
        "FROM python:3.11-slim\nCOPY hostile /selectors\nRUN chmod -R a+rX /selectors\n"
        "USER 65534:65534\nWORKDIR /tmp\n")
    tags["hostile"] = "localhost/expaudit-test/hostile:1"
    build_image(engine, context, tags["hostile"], log, dockerfile=context / "Containerfile")
    return tags


@pytest.fixture
def sandbox(client):
    return DockerSandbox(client)


def _recorded_digest(client, tag: str) -> str:
    """The digest a run of `tag` must record: its manifest digest, else its content id."""
    image = client.images.get(tag)
    digests = image.attrs.get("RepoDigests") or []
    return digests[0].split("@", 1)[1] if digests else image.id


def _selector_containers(client) -> list:
    return client.containers.list(all=True, filters={"label": "org.expaudit.role=selector"})


def _selector_processes() -> list[int]:
    """Host pids in a container's cgroup that run as the selectors' uid."""
    uid = defaults.DOCKER_USER.split(":")[0]
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            status = (entry / "status").read_text()
            cgroup = (entry / "cgroup").read_text()
        except OSError:
            continue
        uid_line = next(line for line in status.splitlines() if line.startswith("Uid:"))
        if uid_line.split()[1] == uid and "libpod" in cgroup:
            found.append(int(entry.name))
    return found


def _hostile(images, name: str, input_dir: Path, tmp_path: Path, **kwargs) -> RunSpec:
    return _spec(images["hostile"], input_dir, tmp_path,
                 command=("python", f"/selectors/{name}/selector.py"), **kwargs)


def _run_hostile(sandbox, images, name: str, demo, tmp_path: Path):
    """Run hostile selector `name` on the demo input with the test limits; its `RunResult`."""
    input_dir, _ = demo
    return sandbox.run(_hostile(images, name, input_dir, tmp_path))


def _number_after(word: str, text: str) -> int:
    """The count a hostile selector prints after `word` (e.g. "forked 15 children")."""
    return int(text.split(f"{word} ")[1].split()[0])


@pytest.fixture
def contained(client, sandbox, images, demo, tmp_path):
    """After the test: no selector container or process is left, and a normal selector runs."""
    yield
    assert _selector_containers(client) == []
    deadline = time.monotonic() + 5
    while _selector_processes() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _selector_processes() == []
    input_dir, setting = demo
    run = run_selector(sandbox, _spec(images["object-proximity"], input_dir, tmp_path),
                       setting.experience_ids, setting.scene_ids)
    assert run.result.status is RunStatus.OK, (run.result.reason, run.result.stderr_tail)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["raw32", "object-proximity"])
def test_example_selector_runs_as_a_sibling_container(client, sandbox, images, demo, tmp_path, name):
    input_dir, setting = demo
    run = run_selector(sandbox, _spec(images[name], input_dir, tmp_path),
                       setting.experience_ids, setting.scene_ids)
    assert run.result.status is RunStatus.OK, (run.result.reason, run.result.stderr_tail)
    assert run.result.exit_code == 0
    assert run.result.image_digest == _recorded_digest(client, images[name])
    assert run.scores.scores.shape == (3, 6)
    # scene j is a perturbed copy of experience j mod 3 (sandbox.demo)
    np.testing.assert_array_equal(run.scores.scores.argmax(axis=0), [0, 1, 2, 0, 1, 2])
    assert _selector_containers(client) == []


@pytest.mark.slow
def test_the_container_has_the_promised_limits(sandbox, images, demo, tmp_path, contained):
    """What docs/self_hosting.md promises, read from inside the running container."""
    input_dir, _ = demo
    limits = Limits(wall_seconds=10, memory_bytes=192 * defaults.MIB, pids=24, cpus=1,
                    output_bytes=4 * defaults.MIB, tmp_bytes=8 * defaults.MIB)
    result = sandbox.run(_hostile(images, "probe", input_dir, tmp_path, limits=limits))
    assert result.status is RunStatus.OK, result.stderr_tail
    seen = json.loads(result.stdout_tail)
    assert (seen["uid"], seen["gid"]) == (65534, 65534) and set(seen["groups"]) <= {65534}
    assert int(seen["cap_eff"], 16) == 0 and int(seen["cap_bnd"], 16) == 0
    assert seen["no_new_privs"] == "1"
    assert seen["interfaces"] == ["lo"]  # network none
    assert "ro" in seen["root_options"] and not seen["root_writable"] and not seen["usr_writable"]
    assert not seen["input_writable"]
    assert {"noexec", "nosuid", "nodev"} <= set(seen["tmp_options"]) and seen["tmp_writable"]
    assert int(seen["memory"]) == limits.memory_bytes
    assert seen["memsw"] is None or int(seen["memsw"]) == limits.memory_bytes  # no swap
    assert int(seen["pids"]) == limits.pids
    assert seen["fsize"] == limits.output_bytes
    assert (seen["nofile"], seen["core"]) == (defaults.OPEN_FILES, 0)
    assert "EXPAUDIT_INPUT" in seen["env"]


@pytest.mark.slow
def test_network_is_unreachable(sandbox, images, demo, tmp_path, contained):
    input_dir, _ = demo
    with watched_listener("0.0.0.0") as (port, accepted):
        result = sandbox.run(_hostile(images, "network", input_dir, tmp_path, env={"HOSTILE_PORT": str(port)}))
    assert accepted == []
    assert "CONNECTED" not in result.stdout_tail
    # 127.0.0.1 is the container's own loopback (refused); the rest has no route
    assert result.stdout_tail.count("Network is unreachable") == 2, result.stdout_tail
    assert result.status is RunStatus.CRASHED and result.exit_code == 3
    assert result.reason == "exited with code 3"


@pytest.mark.slow
def test_fork_bomb_stops_at_pids_limit(sandbox, images, demo, tmp_path, contained):
    result = _run_hostile(sandbox, images, "forkbomb", demo, tmp_path)
    assert result.status is RunStatus.PIDS_LIMIT, (result.reason, result.stdout_tail)
    assert "pids limit of 16 reached" in result.reason
    assert 0 < _number_after("forked", result.stdout_tail) < LIMITS.pids


@pytest.mark.slow
def test_fork_holder_is_killed_at_wall_limit(sandbox, images, demo, tmp_path, contained):
    result = _run_hostile(sandbox, images, "forkhold", demo, tmp_path)
    assert result.status is RunStatus.TIMEOUT
    assert 0 < _number_after("holding", result.stdout_tail) < LIMITS.pids


@pytest.mark.slow
def test_unbounded_allocation_stops_at_memory_limit(sandbox, images, demo, tmp_path, contained):
    result = _run_hostile(sandbox, images, "memory", demo, tmp_path)
    assert result.status is RunStatus.OOM, (result.reason, result.stderr_tail)
    assert result.reason.startswith(f"ran out of its memory limit of {256 * defaults.MIB} bytes")
    assert result.exit_code == -9
    assert result.wall_seconds < LIMITS.wall_seconds


@pytest.mark.slow
def test_memory_split_over_processes_is_one_limit(sandbox, images, demo, tmp_path, contained):
    """Four processes of 200 MiB each: one container-wide memory limit of 256 MiB stops them."""
    result = _run_hostile(sandbox, images, "memfork", demo, tmp_path)
    assert "4 processes hold" not in result.stdout_tail, result.stdout_tail  # the limit held
    if result.status is RunStatus.OOM:  # the kernel killed the selector's own process
        assert result.reason.startswith(f"ran out of its memory limit of {256 * defaults.MIB} bytes")
    else:
        # It killed a child instead: Podman on cgroup v1 reports no OOM for a container, so
        # what is seen is the selector's own exit after its children died of SIGKILL.
        assert result.status is RunStatus.CRASHED, (result.reason, result.stdout_tail)
        assert "-9" in result.stdout_tail, result.stdout_tail


@pytest.mark.slow
def test_endless_loop_is_killed_at_wall_limit(client, sandbox, images, demo, tmp_path, contained):
    result = _run_hostile(sandbox, images, "loop", demo, tmp_path)
    assert result.status is RunStatus.TIMEOUT
    assert result.reason == "killed at the wall-clock limit of 5 s"
    assert "looping" in result.stdout_tail
    assert result.wall_seconds >= LIMITS.wall_seconds


@pytest.mark.slow
def test_ten_gigabyte_output_is_capped(sandbox, images, demo, tmp_path, contained):
    input_dir, setting = demo
    free_before = shutil.disk_usage(tmp_path).free
    spec = _hostile(images, "bigoutput", input_dir, tmp_path)
    run = run_selector(sandbox, spec, setting.experience_ids, setting.scene_ids)
    assert run.result.status is RunStatus.OUTPUT_LIMIT, (run.result.reason, run.result.stdout_tail)
    assert run.result.reason.startswith(f"/output reached its size cap of {8 * defaults.MIB} bytes")
    assert run.scores is None
    copied = sum(p.stat().st_size for p in spec.output_dir.iterdir())
    assert copied <= LIMITS.output_bytes
    # The host disk did not take the 10 GB: a bound far below it and far above the cap, so that
    # other writers on a shared disk during the run do not make the check flaky.
    assert free_before - shutil.disk_usage(tmp_path).free < 64 * LIMITS.output_bytes


@pytest.mark.slow
def test_symlink_out_of_output_is_rejected(sandbox, images, demo, tmp_path, contained):
    input_dir, setting = demo
    target = tmp_path / "host-target.csv"
    target.write_text("scene_id,experience_id,score\n")
    spec = _hostile(images, "symlink", input_dir, tmp_path, env={"HOSTILE_TARGET": str(target)})
    run = run_selector(sandbox, spec, setting.experience_ids, setting.scene_ids)
    assert run.result.status is RunStatus.OUTPUT_INVALID, run.result.reason
    assert run.result.reason == (f"/output/scores.csv: value '{target}' is a symbolic link; "
                                 f"links are rejected")
    assert "hard link refused" in run.result.stdout_tail
    assert target.read_text() == "scene_id,experience_id,score\n"


@pytest.mark.slow
def test_outcome_files_outside_input_are_invisible(sandbox, images, demo, tmp_path, contained):
    input_dir, _ = demo
    secret, secret_file = outcome_secret(tmp_path)
    data_dir = secret_file.parent
    spec = _hostile(images, "snoop", input_dir, tmp_path,
                    env={"HOSTILE_SECRET_PATH": str(secret_file), "HOSTILE_CHECKOUT": str(REPO)})
    result = sandbox.run(spec)
    assert result.status is RunStatus.OK, result.stderr_tail
    assert secret not in result.stdout_tail + result.stderr_tail
    lines = result.stdout_tail.splitlines()
    # only PID 1 of the container's own namespace (its init, the selector's user) is readable
    assert [line for line in lines if line.startswith("READ ") and "/proc/1/" not in line] == []
    assert f"denied {secret_file}: No such file or directory" in lines
    assert f"denied {data_dir}: No such file or directory" in lines
    assert f"denied {REPO}/pyproject.toml: No such file or directory" in lines
    assert f"denied {REPO}: No such file or directory" in lines
    (root,) = [line for line in lines if line.startswith("LISTED /proc/1/root:")]
    assert "'selectors'" in root and "'input'" in root and "'work'" not in root  # its own root
    assert "outcome-like files in /input: []" in result.stdout_tail


@pytest.mark.slow
def test_environment_secret_does_not_reach_selector(sandbox, images, demo, tmp_path, contained,
                                                    monkeypatch):
    input_dir, _ = demo
    secret = "token-5d1e8b2f-do-not-leak"
    monkeypatch.setenv("EXPAUDIT_ADMIN_TOKEN", secret)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", secret)
    result = sandbox.run(_hostile(images, "envsecret", input_dir, tmp_path))
    assert result.status is RunStatus.OK, result.stderr_tail
    shown = str(result.to_dict())
    assert secret not in shown
    assert "EXPAUDIT_ADMIN_TOKEN" not in shown and "AWS_SECRET_ACCESS_KEY" not in shown
    assert "'EXPAUDIT_INPUT': '/input'" in result.stdout_tail


@pytest.mark.slow
def test_binds_are_read_only_even_over_world_writable_host_directories(sandbox, images, demo,
                                                                       tmp_path, contained):
    input_dir = tmp_path / "open-input"
    shutil.copytree(demo[0], input_dir)
    for directory in (input_dir, input_dir / "library"):
        directory.chmod(0o777)
    before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    result = sandbox.run(_hostile(images, "plant", input_dir, tmp_path))
    assert result.status is RunStatus.OK, result.stderr_tail
    assert "PLANTED" not in result.stdout_tail, result.stdout_tail
    for target in ("/input/planted.txt", "/input/planted-dir", "/input/library/planted.txt",
                   "/input/library/planted-dir"):
        assert f"refused {target}: Read-only file system" in result.stdout_tail, result.stdout_tail
    after = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*") if "out-" not in str(p))
    assert after == [p for p in before if "out-" not in str(p)]


@pytest.mark.slow
def test_cpu_widening_stays_inside_the_cpu_limit(sandbox, images, demo, tmp_path, contained):
    result = _run_hostile(sandbox, images, "affinity", demo, tmp_path)
    assert result.status is RunStatus.OK, result.stderr_tail
    assert "cpus before" in result.stdout_tail


# ------------------------------------------- engine failures, for real --

@pytest.mark.slow
def test_missing_image_is_setup_failed(client, sandbox, demo, tmp_path):
    input_dir, _ = demo
    result = sandbox.run(_spec("localhost/expaudit-test/never-built:1", input_dir, tmp_path))
    assert result.status is RunStatus.SETUP_FAILED
    assert result.reason == "image 'localhost/expaudit-test/never-built:1' is not on this runner"
    assert _selector_containers(client) == []


@pytest.mark.slow
def test_container_refused_by_the_engine_is_setup_failed(client, sandbox, images, demo, tmp_path):
    """A work directory the engine cannot bind (a colon in its path): the runner's
    fault, never the submitter's, and no container is left."""
    odd_input = tmp_path / "in:put"
    shutil.copytree(demo[0], odd_input)
    result = sandbox.run(_spec(images["object-proximity"], odd_input, tmp_path))
    assert result.status is RunStatus.SETUP_FAILED
    assert result.reason.startswith("the Docker engine refused the container: "), result.reason
    assert "in:put" in result.reason
    assert result.image_digest == _recorded_digest(client, images["object-proximity"])
    assert _selector_containers(client) == []


@pytest.mark.slow
def test_command_missing_from_the_image_is_the_selectors_crash(client, sandbox, images, demo,
                                                               tmp_path):
    """The container starts (its init runs) and the selector's command cannot: a crash with
    the init's error line, charged to the selector; the container is removed."""
    input_dir, _ = demo
    spec = _spec(images["hostile"], input_dir, tmp_path, command=("/no/such/program",))
    result = sandbox.run(spec)
    assert result.status is RunStatus.CRASHED, result.reason
    assert result.exit_code not in (0, None)
    assert "No such file or directory" in result.stderr_tail
    assert _selector_containers(client) == []


@pytest.mark.slow
def test_pinned_reference_runs_and_records_its_digest(client, sandbox, images, demo, tmp_path):
    input_dir, setting = demo
    image = client.images.get(images["object-proximity"])
    (reference,) = [d for d in image.attrs["RepoDigests"] if d.startswith("localhost/")][:1]
    run = run_selector(sandbox, _spec(reference, input_dir, tmp_path),
                       setting.experience_ids, setting.scene_ids)
    assert run.result.status is RunStatus.OK, run.result.reason
    assert run.result.image_digest == reference.split("@", 1)[1]


@pytest.mark.slow
def test_non_empty_output_dir_is_refused(sandbox, images, demo, tmp_path):
    input_dir, _ = demo
    spec = _spec(images["raw32"], input_dir, tmp_path)
    (spec.output_dir / "left-over.csv").write_text("x")
    with pytest.raises(SandboxConfigError, match="field 'output_dir'.*must be an existing empty"):
        sandbox.run(spec)


# ------------------------------------------------- what no engine here has --

class _RecordingGpuClient:
    """Records the container a GPU run asks for; this machine has no NVIDIA runtime."""

    def __init__(self):
        self.created = []
        self.images = self.containers = self

    def get(self, reference):
        return type("Image", (), {"id": "sha256:" + "ab" * 32, "attrs": {"RepoDigests": []}})()

    def create(self, **kwargs):
        self.created.append(kwargs)
        raise docker.errors.APIError("recorded", explanation="no GPU runtime here")


def test_gpu_only_when_allowed_and_mapped_to_a_device_request(tmp_path):
    (tmp_path / "in").mkdir()
    gpu = _spec("x", tmp_path / "in", tmp_path, limits=Limits(gpu=True),
                command=("python", "/selector/selector.py"))
    client = _RecordingGpuClient()
    refused = DockerSandbox(client).run(gpu)
    assert refused.status is RunStatus.SETUP_FAILED
    assert refused.reason == "the run asks for a GPU and this runner gives none"
    assert client.created == []
    DockerSandbox(client, allow_gpu=True).run(gpu)
    assert client.created[0]["device_requests"] == [{"count": -1, "capabilities": [["gpu"]]}]
    host = _create_container_args({**client.created[0], "version": "1.45"})["host_config"]
    assert host["DeviceRequests"] == [{"Driver": "", "Count": -1, "DeviceIDs": [],
                                       "Capabilities": [["gpu"]], "Options": {}}]
