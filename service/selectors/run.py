"""The container part of an audit job: build /input, run the selector, read its scores.

The sandbox is the one the worker was configured with (`JobContext.sandbox`:
`LocalSandbox` or `DockerSandbox`, passed in, never global). What the run
did is written to the submission (`selector/run.json`, with the size-capped
stdout and stderr, shown to the owner only) whatever happened. A selector
that crashes, hangs, runs out of a limit or writes an invalid scores file is
the submitter's fault (`SelectorFailed`); a sandbox that could not be built
is the service's (retried).

A run's temporary tree (/input, /output, the unpacked selector) lives in the
local sandbox's worker directory (`sandbox.workdir`), so that a worker
started after this one was killed removes it; elsewhere in a temporary
directory. That directory is claimed in one of this instance's own
(`instance_key`), so that instances sharing a host never reap each other's.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from expaudit.errors import InternalError, UserError
from leaderboard.scores import SettingScores
from sandbox.base import Limits, RunResult, RunSpec, RunStatus, SandboxConfigError
from sandbox.docker_backend import DockerSandbox
from sandbox.execute import run_selector
from sandbox.local import LocalSandbox
from sandbox.workdir import instance_dir
from service.process import protected_paths
from service.submissions import Manifest
from service.errors import ValidationFailed
from service.selectors.archive import ArchiveUnpackFailed, unpack_archive

log = logging.getLogger(__name__)


class SelectorFailed(UserError):
    """The submitted selector did not produce a valid scores file (the submitter's fault)."""


class SandboxUnavailable(InternalError, RuntimeError):
    """This worker cannot run selectors, or the sandbox could not be built (infrastructure)."""


@dataclass(frozen=True)
class ContainerOutcome:
    """The validated scores of a container submission and what to record in its report."""

    scores: SettingScores
    provenance: dict


def provenance(manifest: Manifest, result: RunResult) -> dict:
    """The report's record of what ran: backend, digest, archive hash, run status, wall time."""
    return {"backend": manifest.selector_backend, "image": manifest.selector_image,
            "archive_sha256": manifest.input_sha256 if manifest.selector_backend == "local" else None,
            "image_digest": result.image_digest, "status": result.status.value,
            "wall_seconds": round(result.wall_seconds, 3)}


def selector_image(ctx, manifest: Manifest, work: Path) -> str:
    """The selector directory (local backend, unpacked into `work`) or the pinned image.

    An archive the check refuses now, or that cannot be unpacked because of
    what it holds, is the submitter's (`SelectorFailed`), whose message names
    the archive and the entry, never the host directory it was unpacked in; a
    host that ran out of disk is the service's (`HostUnpackFailed`, retried).
    """
    if manifest.selector_backend == "docker":
        return manifest.selector_image
    data = ctx.store.get_bytes(manifest.input_key)
    try:
        return str(unpack_archive(data, manifest.filename, work / "selector"))
    except (ValidationFailed, ArchiveUnpackFailed) as exc:
        raise SelectorFailed(str(exc)) from None


@contextlib.contextmanager
def run_tree(sandbox) -> Iterator[Path]:
    """A fresh 0755 directory for one run, removed afterwards: in the sandbox's worker
    directory where it has one (local sandbox), else in the temporary directory."""
    workdir = getattr(sandbox, "workdir", None)
    if workdir is not None:
        path = workdir.mkdtemp("run-")
        try:
            yield path
        finally:
            shutil.rmtree(path, ignore_errors=True)
        return
    with tempfile.TemporaryDirectory(prefix="expaudit-run-") as tmp:
        path = Path(tmp)
        path.chmod(0o755)
        yield path


def run_container(ctx, sid: str, manifest: Manifest) -> ContainerOutcome:
    """Run submission `sid`'s selector on its one setting and return the validated scores.

    Raises `SelectorFailed` when the selector is at fault, `SandboxUnavailable`
    when the worker is.
    """
    if ctx.sandbox is None:
        raise SandboxUnavailable("this worker has no selector sandbox (EXPAUDIT_SANDBOX=none)")
    setting_id = manifest.settings[0]
    limits = ctx.selector_limits or Limits()
    with run_tree(ctx.sandbox) as work:
        image = selector_image(ctx, manifest, work)  # first: a bad archive needs no /input
        info = ctx.catalog.selector_input(setting_id, work / "input")
        output = work / "output"
        output.mkdir()
        spec = RunSpec(image=image, input_dir=work / "input", output_dir=output, limits=limits)
        run = run_selector(ctx.sandbox, spec, info.experience_ids, info.scene_ids)
    result = run.result
    record = {**result.to_dict(), "setting_id": setting_id, "backend": manifest.selector_backend}
    ctx.repo.write_selector_run(sid, record)
    log.info("selector of %s: %s (%s)", sid, result.status.value, result.reason)
    if result.status is RunStatus.SETUP_FAILED:
        raise SandboxUnavailable(f"the sandbox could not run the selector: {result.reason}")
    if run.scores is None:
        raise SelectorFailed(f"selector {result.status.value}: {result.reason}")
    scores = SettingScores(setting_id, run.scores.scores, run.scores.selection_only)
    return ContainerOutcome(scores, provenance(manifest, result))


def make_sandbox(config):
    """The sandbox named by `config.sandbox`; None for `none` or a host that cannot run it
    (container submissions then fail with fault `infrastructure`, naming why).

    The Docker client is created here, once per worker, from the usual
    `DOCKER_HOST` environment (only runners hold the Docker socket).
    """
    if config.sandbox == "none":
        return None
    if config.sandbox == "docker":
        import docker

        try:
            return DockerSandbox(docker.from_env())
        except docker.errors.DockerException as exc:
            log.warning("container submissions cannot run on this worker: no Docker engine (%s)",
                        exc)
            return None
    try:  # refuses any run that would show a selector the service's state (`protected_paths`)
        return LocalSandbox(protected=protected_paths(config),
                            work_root=instance_dir(instance_key(config)))
    except SandboxConfigError as exc:
        log.warning("container submissions cannot run on this worker: %s", exc)
        return None


def instance_key(config) -> str:
    """What tells this service instance from others on the same host: the location of its
    store (an absolute directory, or the S3 endpoint and bucket). Its workers and runners
    claim their sandbox directories in `sandbox.workdir.instance_dir` of it, so
    that starting one instance never reaps another's."""
    if config.is_s3:
        return f"s3 {config.s3_endpoint or 'aws'} {config.store}"
    return f"local {os.path.realpath(config.store)}"


def selector_limits(config) -> Limits:
    """The limits of a selector run: the sandbox defaults with the configured wall clock."""
    return Limits(wall_seconds=float(config.selector_wall_seconds))
