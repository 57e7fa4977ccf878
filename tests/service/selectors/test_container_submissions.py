"""Container submissions over HTTP: gunicorn, an RQ worker (scores files, publishing), a
runner (the `selectors` queue) and redis-server; selectors run in the local namespace sandbox
on a tiny frozen root cut from the real data."""

from __future__ import annotations

import io
import json
import tarfile
from pathlib import Path

import pytest
import requests

from sandbox.local import directory_digest
from service.errors import ValidationFailed
from service.selectors.archive import check_archive, check_image_reference, unpack_archive
from tests.support.paths import REPO_ROOT
from tests.support.servers import ADMIN_TOKEN, ServiceStack, bearer, new_token
from tests.support.tiny_frozen import (copy_cells, copy_library, copy_query_set, experience_ids,
                               real_data_available)
from tests.support.selectors import (SANDBOX_OK, SETTING, STATES, assert_sandbox_failure_is_the_services_fault,
                                     selector_archive)
from tests.support.submissions import post_submission, wait_final


def _archive_of(members: dict[str, bytes], links: dict[str, str] | None = None) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
        for name, target in (links or {}).items():
            info = tarfile.TarInfo(name)
            info.type, info.linkname = tarfile.SYMTYPE, target
            tar.addfile(info)
    return buffer.getvalue()


# ------------------------------------------------------------------ archives


def test_archive_with_a_top_folder_unpacks_to_the_same_selector(tmp_path):
    source = REPO_ROOT / "examples" / "selectors" / "raw32"
    selector = unpack_archive(selector_archive(source, top="raw32"), "raw32.tar.gz", tmp_path / "s")
    assert (selector / "selector.py").read_bytes() == (source / "selector.py").read_bytes()
    assert directory_digest(selector) == directory_digest(source)
    assert oct((selector / "selector.py").stat().st_mode & 0o777) == "0o644"


@pytest.mark.parametrize("members, links, message", [
    ({"../evil.py": b"x", "selector.py": b""}, None, r"entry '\.\./evil\.py' leaves the archive"),
    ({"selector.py": b""}, {"data": "/etc/passwd"}, r"entry 'data' is a link or special file"),
    ({"main.py": b""}, None, r"has no 'selector\.py' at its top"),
])
def test_bad_archives_are_refused_naming_the_entry(members, links, message):
    with pytest.raises(ValidationFailed, match=message):
        check_archive(_archive_of(members, links), "bad.tar.gz")


def test_a_file_that_is_not_a_tar_gz_is_refused():
    with pytest.raises(ValidationFailed, match=r"selector archive 'x\.tar\.gz': is not a gzip"):
        check_archive(b"scene_id,experience_id\n", "x.tar.gz")


def test_image_references_must_be_pinned_by_digest():
    pinned = "registry.example.org/lab/raw32@sha256:" + "a" * 64
    assert check_image_reference(pinned) == pinned
    with pytest.raises(ValidationFailed, match=r"image must be a reference pinned by digest.*"
                                               r"got 'lab/raw32:latest'"):
        check_image_reference("lab/raw32:latest")


# -------------------------------------------------------------- end to end

pytestmark_e2e = [pytest.mark.slow,
                  pytest.mark.skipif(not SANDBOX_OK, reason="the local sandbox needs root, "
                                     "unshare and setpriv"),
                  pytest.mark.skipif(not real_data_available(), reason="frozen data not built")]


@pytest.fixture(scope="module")
def stack(tmp_path_factory, redis_server):
    directory = tmp_path_factory.mktemp("container")
    root = directory / "frozen"
    copy_library(root, experience_ids(3))
    copy_query_set(root, "stack-orig", STATES)
    assert copy_cells(root, "stack-orig", experience_ids(3), STATES) == 3 * len(STATES) * 5
    stack = ServiceStack(directory, redis_server, directory / "no-catalog",
                         extra_env={"EXPAUDIT_CATALOG": "", "EXPAUDIT_FROZEN_ROOT": str(root),
                                    "EXPAUDIT_SELECTOR_WALL_SECONDS": "8"})
    stack.start_web()
    stack.start_worker()  # publish and audit: scores files only
    stack.start_runner()  # the selectors queue
    yield stack
    stack.stop()


@pytest.fixture(scope="module")
def auth(stack):
    return bearer(new_token(stack.url, "container-lab", timeout=10))


def _marks(fn):
    """The marks of an end-to-end test: slow, and skipped where the sandbox or data is missing."""
    for mark in pytestmark_e2e:
        fn = mark(fn)
    return fn


@_marks
def test_raw32_container_submission_is_run_audited_and_published(stack, auth):
    source = REPO_ROOT / "examples" / "selectors" / "raw32"
    response = post_submission(stack.url, auth, "selector", "raw32 container.tar.gz",
                               selector_archive(source),
                               setting=SETTING, name="raw32 container", public="true")
    assert response.status_code == 202, response.text
    assert response.json()["kind"] == "container"
    sid = response.json()["id"]
    final = wait_final(stack, auth, sid)
    assert final["state"] == "published", (final, stack.logs())
    assert final["selector"]["run"]["status"] == "ok"
    worker, runner = stack.workers
    assert f"selectors: audit {sid}" in runner.log_tail(20000), runner.log_tail()
    assert f"audit {sid}" not in worker.log_tail(20000), worker.log_tail()
    report = requests.get(f"{stack.url}{final['report_urls'][SETTING]['json']}", headers=auth,
                          timeout=10).json()
    assert report["selector"]["image_digest"] == directory_digest(source)
    assert report["selector"]["backend"] == "local"
    assert report["inputs"]["n_scenes"] == 5 * len(STATES)
    board = requests.get(f"{stack.url}/api/v1/leaderboard/{SETTING}", timeout=10).json()
    assert f"{sid}.{SETTING}" in [row["submission_id"] for row in board["rows"]]
    run = requests.get(f"{stack.url}/api/v1/submissions/{sid}/run", headers=auth, timeout=10)
    assert run.status_code == 200 and set(run.json()) >= {"stdout_tail", "stderr_tail"}
    anonymous = requests.get(f"{stack.url}/api/v1/submissions/{sid}/run", timeout=10)
    assert anonymous.status_code == 401
    other = requests.post(f"{stack.url}/api/v1/tokens", json={"name": "other-lab", "owner": "other-lab"},
                          headers={"Authorization": f"Bearer {ADMIN_TOKEN}"}, timeout=10).json()
    stranger = requests.get(f"{stack.url}/api/v1/submissions/{sid}/run", timeout=10,
                            headers={"Authorization": f"Bearer {other['token']}"})
    assert stranger.status_code == 404  # public submission, but its logs are the owner's
    public_status = requests.get(f"{stack.url}/api/v1/submissions/{sid}", timeout=10).json()
    assert "stdout_tail" not in json.dumps(public_status)


@_marks
def test_endless_loop_fails_with_its_reason_while_a_normal_submission_publishes(stack, auth):
    loop = post_submission(stack.url, auth, "selector", "endless loop.tar.gz",
                           selector_archive(REPO_ROOT / "tests" / "hostile_selectors" / "loop"),
                           setting=SETTING, name="endless loop", public="true")
    normal = post_submission(stack.url, auth, "selector", "object proximity.tar.gz",
                             selector_archive(REPO_ROOT / "examples" / "selectors" / "object-proximity"),
                             setting=SETTING, name="object proximity", public="true")
    assert loop.status_code == 202 and normal.status_code == 202, (loop.text, normal.text)
    bad, good = wait_final(stack, auth, loop.json()["id"]), wait_final(stack, auth, normal.json()["id"])
    assert good["state"] == "published", (good, stack.logs())
    assert bad["state"] == "failed" and bad["fault"] == "submitter"
    assert bad["reason"] == "selector timeout: killed at the wall-clock limit of 8 s"
    run = requests.get(f"{stack.url}/api/v1/submissions/{loop.json()['id']}/run", headers=auth,
                       timeout=10).json()
    assert "looping" in run["stdout_tail"]
    assert all(worker.alive for worker in stack.workers), stack.logs()


@_marks
def test_bad_archive_is_refused_at_upload(stack, auth):
    response = post_submission(stack.url, auth, "selector", "no entry.tar.gz",
                               _archive_of({"main.py": b"print(1)\n"}),
                               setting=SETTING, name="no entry", public="true")
    assert response.status_code == 422
    error = response.json()["error"]
    assert error["field"] == "selector"
    assert "has no 'selector.py' at its top" in error["message"]


@_marks
def test_image_reference_is_refused_by_a_local_sandbox_service(stack, auth):
    response = requests.post(
        f"{stack.url}/api/v1/submissions", headers=auth,
        files={"unused": ("x", b"", "text/plain")},
        data={"setting": SETTING, "image": "lab/raw32@sha256:" + "b" * 64}, timeout=30)
    assert response.status_code == 422
    assert response.json()["error"]["field"] == "image"
    assert "runs selectors in its local sandbox" in response.json()["error"]["message"]


# ------------------------------------------------------- backend configuration


def test_the_configured_backend_decides_the_sandbox_object(monkeypatch):
    from sandbox.docker_backend import DockerSandbox
    from sandbox.local import LocalSandbox
    from service.selectors.run import make_sandbox, selector_limits
    from service.process.config import ServiceConfig, ConfigError

    assert make_sandbox(ServiceConfig(sandbox="none")) is None
    if Path("/var/run/docker.sock").exists():
        assert isinstance(make_sandbox(ServiceConfig(sandbox="docker")), DockerSandbox)
    from tests.support.servers import free_port

    monkeypatch.setenv("DOCKER_HOST", f"tcp://127.0.0.1:{free_port()}")  # no engine listens
    assert make_sandbox(ServiceConfig(sandbox="docker")) is None
    if SANDBOX_OK:
        assert isinstance(make_sandbox(ServiceConfig(sandbox="local")), LocalSandbox)
    assert selector_limits(ServiceConfig(selector_wall_seconds=42)).wall_seconds == 42.0
    with pytest.raises(ConfigError, match=r"EXPAUDIT_SANDBOX must be one of \['local', "
                                            r"'docker', 'none'\], got 'podman'"):
        ServiceConfig(sandbox="podman")
    with pytest.raises(ConfigError, match=r"EXPAUDIT_SELECTOR_WALL_SECONDS must be between 1 "
                                            r"and 480, got 900"):
        ServiceConfig(selector_wall_seconds=900)


@pytest.mark.skipif(not real_data_available(), reason="frozen data not built")
def test_a_docker_service_takes_pinned_images_and_refuses_archives(tmp_path):
    from service.catalog.catalog import BenchmarkCatalog
    from service.selectors.submissions import check_selector

    copy_library(tmp_path, experience_ids(3))
    copy_query_set(tmp_path, "stack-orig", STATES[:1])
    catalog = BenchmarkCatalog(tmp_path)
    image = "lab/raw32@sha256:" + "c" * 64
    checked = check_selector(b"", image, {"setting": SETTING, "image": image}, catalog, "docker")
    assert (checked.backend, checked.image, checked.data) == ("docker", image, image.encode())
    archive = selector_archive(REPO_ROOT / "examples" / "selectors" / "raw32")
    with pytest.raises(ValidationFailed, match=r"runs selectors as Docker images"):
        check_selector(archive, "raw32.tar.gz", {"setting": SETTING}, catalog, "docker")
    with pytest.raises(ValidationFailed, match=r"names exactly one setting .* got "
                                               r"\['stack-replay-k3-orig', 'stack-replay-k10-a'\]"):
        check_selector(archive, "raw32.tar.gz",
                       {"setting": f"{SETTING},stack-replay-k10-a"}, catalog, "local")
    with pytest.raises(ValidationFailed, match=r"this service does not run selectors"):
        check_selector(archive, "raw32.tar.gz", {"setting": SETTING}, catalog, "none")


@pytest.mark.skipif(not real_data_available(), reason="frozen data not built")
def test_a_docker_service_records_the_pinned_image_on_the_submission(tmp_path,
                                                                    redis_conn):
    from service.catalog.catalog import BenchmarkCatalog
    from service.store.storage import LocalStore
    from tests.support.servers import bearer, make_app

    copy_library(tmp_path / "frozen", experience_ids(3))
    copy_query_set(tmp_path / "frozen", "stack-orig", STATES[:1])
    copy_cells(tmp_path / "frozen", "stack-orig", experience_ids(3), STATES[:1])
    store = LocalStore(tmp_path / "store")
    client = make_app(store, redis_conn, BenchmarkCatalog(tmp_path / "frozen"),
                      sandbox="docker").test_client()
    token = client.post("/api/v1/tokens", json={"name": "docker-lab", "owner": "docker-lab"},
                        headers=bearer(ADMIN_TOKEN)).json["token"]
    image = "registry.example.org/lab/raw32@sha256:" + "d" * 64
    created = client.post("/api/v1/submissions", headers=bearer(token),
                          data={"setting": SETTING, "image": image},
                          content_type="multipart/form-data")
    assert created.status_code == 202, created.get_data(as_text=True)
    document = created.json
    assert document["kind"] == "container" and document["name"] == "raw32"
    assert document["selector"]["backend"] == "docker"
    assert document["selector"]["image"] == image and document["selector"]["run"] is None
    from rq.job import Job

    assert Job.fetch(f"audit-{document['id']}", connection=redis_conn).origin == "selectors"
    not_run = client.get(f"/api/v1/submissions/{document['id']}/run", headers=bearer(token))
    assert not_run.status_code == 409 and not_run.json["error"]["code"] == "not_ready"


# ------------------------------------------------------- the sandbox's own failures


@pytest.mark.skipif(not SANDBOX_OK, reason="the local sandbox needs root, unshare and setpriv")
@pytest.mark.skipif(not real_data_available(), reason="frozen data not built")
def test_a_sandbox_that_cannot_start_the_interpreter_is_the_services_fault(tmp_path, redis_server,
                                                                          monkeypatch):
    """The interpreter not starting inside (here: not mounted, as when a fresh /tmp hid a
    venv under /tmp) is retried and finally the service's failure; no message names a
    host path."""
    from sandbox.local import LocalSandbox

    sandbox = LocalSandbox()
    monkeypatch.setattr(sandbox, "python_binds", [])  # the interpreter is not mounted inside
    # a database of its own: the module's service stack serves the selectors queue of db 0
    assert_sandbox_failure_is_the_services_fault(
        tmp_path, redis_server.url, 7, sandbox,
        "audit failed: SandboxUnavailable: the sandbox could not run the selector: could not "
        "build the sandbox: the interpreter does not start inside")
