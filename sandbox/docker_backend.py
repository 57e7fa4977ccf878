"""The production selector sandbox: a locked-down container on a Docker engine.

The container has no network, a read-only root, a size-capped tmpfs /tmp,
no capabilities, `no-new-privileges`, a non-root user (`run_user`: the one
that owns /output), memory (no swap),
CPU and pids limits, a per-file size limit on /output, capped logs, and a GPU
only when the run asks for one and the backend allows it. It runs from the
image's content id, so a tag moved after submission cannot change what runs,
and the image digest is recorded on the result.

The Docker client is passed in (`docker.from_env()` in the runner role, which
alone holds the engine socket); the `docker` package is imported only here,
lazily. /input and /output are bind mounts of host directories: when the
runner itself runs in a container, its work directory must be mounted at the
same path on the host and in the runner, as for any sibling container.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path
from typing import Any

from sandbox import defaults
from sandbox.base import (RunResult, RunSpec, RunStatus, TailBuffer, check_io_dirs,
                                 classify_exit, sandbox_env)

LOG_MAX_SIZE = "1m"
"""Engine-side cap of each container's log (json-file driver), so a selector
printing forever cannot fill the runner's disk; the result keeps the tail."""
SIGNAL_EXIT_BASE = 128
"""The engine reports death by signal N as exit code 128 + N."""
UNREPORTED_OOM = " (killed by SIGKILL; the engine did not report the cause)"
"""Said of a SIGKILL that the sandbox did not send (it sends one only at the
wall-clock limit): within the container the kernel's memory-limit killer is
what sends it. Docker reports that as `OOMKilled`; Podman on a cgroup v1 host
does not, so the run is named by its likely cause and says so."""
NPROC = 4096
"""RLIMIT_NPROC of the container. The pids limit (a cgroup, per container) is
what bounds a selector; this only has to be set, and low enough for any
engine: an engine fills each limit left out with its own default, and Podman's
default exceeds the hard limit of a typical host, so the container fails to
start once capabilities are dropped. It counts processes per uid across
containers, so it is far above the pids limit."""


def run_user(euid: int, egid: int) -> str:
    """The `uid:gid` a selector container runs as, for a runner running as `euid:egid` (pure).

    The selector must write /output, a directory of the runner's, and the
    runner must then read and remove what it wrote. A runner that is not root
    (uid 10001 in the compose deployment) cannot hand a directory to another
    user, so the selector runs as the runner's own uid: it reaches nothing of
    the runner but its two bind mounts. A root runner never lends its uid: the
    selector runs as `defaults.DOCKER_USER` and /output is given to that user.
    """
    return defaults.DOCKER_USER if euid == 0 else f"{euid}:{egid}"


def container_spec(run_spec: RunSpec, image_digest: str,
                   user: str = defaults.DOCKER_USER) -> dict[str, Any]:
    """Keyword arguments of `client.containers.create` for one selector run (pure).

    `image_digest` is the image reference to run, pinned (an image id
    `sha256:...` or `repo@sha256:...`); `user` is `run_user`'s answer.
    """
    limits = run_spec.limits
    spec: dict[str, Any] = {
        "image": image_digest,
        "command": list(run_spec.command) if run_spec.command else None,
        "user": user,
        "environment": sandbox_env(run_spec),
        "working_dir": "/tmp",
        "network_mode": "none",
        "read_only": True,
        "tmpfs": {"/tmp": f"rw,nosuid,nodev,noexec,size={limits.tmp_bytes}"},
        "volumes": {str(Path(run_spec.input_dir).resolve()): {"bind": "/input", "mode": "ro"},
                    str(Path(run_spec.output_dir).resolve()): {"bind": "/output", "mode": "rw"}},
        "cap_drop": ["ALL"],
        "security_opt": ["no-new-privileges:true"],
        "ipc_mode": "private",
        "init": True,
        "mem_limit": limits.memory_bytes,
        "memswap_limit": limits.memory_bytes,
        "nano_cpus": int(round(limits.cpus * 1e9)),
        "pids_limit": limits.pids,
        "ulimits": [{"name": "fsize", "soft": limits.output_bytes, "hard": limits.output_bytes},
                    {"name": "nofile", "soft": defaults.OPEN_FILES, "hard": defaults.OPEN_FILES},
                    {"name": "nproc", "soft": NPROC, "hard": NPROC},
                    {"name": "core", "soft": 0, "hard": 0}],
        "log_config": {"type": "json-file", "config": {"max-size": LOG_MAX_SIZE, "max-file": "1"}},
        "labels": {"org.expaudit.role": "selector"},
    }
    if limits.gpu:
        spec["device_requests"] = [{"count": -1, "capabilities": [["gpu"]]}]
    return spec


def _tree_bytes(directory: Path) -> int:
    """Bytes of regular files under a directory, never following links."""
    total = 0
    for root, _dirs, files in os.walk(directory):
        for name in files:
            path = os.path.join(root, name)
            if not os.path.islink(path):
                total += os.lstat(path).st_size
    return total


class DockerSandbox:
    """Runs selector images on a Docker engine.

    Args:
        client: a `docker.DockerClient` (passed in, never created here).
        allow_gpu: this runner has GPUs to give; a GPU request is refused otherwise.
    """

    def __init__(self, client: Any, *, allow_gpu: bool = False) -> None:
        self.client = client
        self.allow_gpu = allow_gpu

    def _failed(self, reason: str, digest: str | None = None) -> RunResult:
        return RunResult(RunStatus.SETUP_FAILED, reason, None, "", "", 0.0, digest)

    def _pin(self, reference: str) -> tuple[str, str]:
        """(content id to run, digest to record) for an image reference."""
        image = self.client.images.get(reference)
        if "@sha256:" in reference:
            return image.id, reference.split("@", 1)[1]
        repo_digests = image.attrs.get("RepoDigests") or []
        return image.id, (repo_digests[0].split("@", 1)[1] if repo_digests else image.id)

    def run(self, spec: RunSpec) -> RunResult:
        """Run the image; engine errors become `setup_failed`, never exceptions.

        Raises `SandboxConfigError` only for input/output directories that cannot be used.
        """
        from docker import errors  # the SDK is needed only where a Docker engine is used

        check_io_dirs(spec)
        if spec.limits.gpu and not self.allow_gpu:
            return self._failed("the run asks for a GPU and this runner gives none")
        try:
            image_id, digest = self._pin(spec.image)
        except errors.ImageNotFound:
            return self._failed(f"image '{spec.image}' is not on this runner")
        except errors.APIError as exc:
            return self._failed(f"the Docker engine could not inspect image '{spec.image}': "
                                f"{exc.explanation or exc}")
        user = run_user(os.geteuid(), os.getegid())
        if os.geteuid() == 0:
            uid, gid = (int(part) for part in user.split(":"))
            os.chown(spec.output_dir, uid, gid)
        try:
            container = self.client.containers.create(**container_spec(spec, image_id, user))
        except errors.APIError as exc:
            return self._failed(f"the Docker engine refused the container: "
                                f"{exc.explanation or exc}", digest)
        try:
            return self._supervise(container, spec, digest, errors)
        finally:
            try:
                container.remove(force=True)
            except errors.NotFound:
                pass  # already gone: nothing left to clean

    def _supervise(self, container: Any, spec: RunSpec, digest: str, errors: Any) -> RunResult:
        from requests.exceptions import ConnectionError as RequestsConnectionError
        from requests.exceptions import ReadTimeout

        start = time.monotonic()
        timed_out, exit_code = False, None
        try:
            container.start()
            try:
                exit_code = container.wait(timeout=spec.limits.wall_seconds)["StatusCode"]
            except (ReadTimeout, RequestsConnectionError):
                timed_out = True
                container.kill()
            wall = time.monotonic() - start
            container.reload()
            oom_killed = bool(container.attrs.get("State", {}).get("OOMKilled"))
            out, err = TailBuffer(), TailBuffer()
            out.feed(container.logs(stdout=True, stderr=False))
            err.feed(container.logs(stdout=False, stderr=True))
        except errors.APIError as exc:
            return RunResult(RunStatus.SETUP_FAILED, f"the Docker engine failed during the run: "
                             f"{exc.explanation or exc}", None, "", "",
                             time.monotonic() - start, digest)
        if exit_code is not None and SIGNAL_EXIT_BASE < exit_code <= SIGNAL_EXIT_BASE + 64:
            exit_code = SIGNAL_EXIT_BASE - exit_code
        unexplained_kill = exit_code == -signal.SIGKILL and not timed_out and not oom_killed
        status, reason = classify_exit(
            exit_code=exit_code, timed_out=timed_out, limits=spec.limits,
            stderr_tail=err.text(), oom_killed=oom_killed or unexplained_kill,
            output_full=_tree_bytes(spec.output_dir) >= spec.limits.output_bytes)
        if unexplained_kill and status is RunStatus.OOM:
            reason += UNREPORTED_OOM
        return RunResult(status, reason, exit_code, out.text(), err.text(), wall, digest)
