"""A remote selector author's path, over real HTTP: `expaudit selector input` builds the exact
/input tree from a running server, the selector runs on it locally, and the same selector
submitted as a container scores identically. Then `submit-selector`, `submissions`,
`publish` and `report` from the CLI, and the base images and trajectories over the API.

gunicorn, an RQ worker, a runner (the local sandbox) and redis-server, on a tiny frozen
root cut from the real data.
"""

from __future__ import annotations

import io
import json
import subprocess
import sys
import tarfile
from pathlib import Path

import numpy as np
import pytest
import requests

from service.catalog.catalog import BenchmarkCatalog
from tests.support.paths import REPO_ROOT
from tests.support.servers import ServiceStack, new_token, service_env
from tests.support.selectors import SANDBOX_OK, SETTING, STATES
from tests.support.tiny_frozen import (copy_cells, copy_library, copy_query_set, experience_ids,
                               real_data_available)

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600),
              pytest.mark.skipif(not real_data_available(), reason="frozen data not built")]
needs_sandbox = pytest.mark.skipif(not SANDBOX_OK, reason="the local sandbox needs root, "
                                   "unshare and setpriv")
RAW32 = REPO_ROOT / "examples" / "selectors" / "raw32"


@pytest.fixture(scope="module")
def root(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("frozen") / "frozen"
    copy_library(root, experience_ids(3))
    copy_query_set(root, "stack-orig", STATES)
    copy_cells(root, "stack-orig", experience_ids(3), STATES)
    return root


@pytest.fixture(scope="module")
def stack(tmp_path_factory, redis_server, root):
    directory = tmp_path_factory.mktemp("remote")
    stack = ServiceStack(directory, redis_server, directory / "no-catalog",
                         extra_env={"EXPAUDIT_CATALOG": "", "EXPAUDIT_FROZEN_ROOT": str(root)})
    stack.start_web(workers=1)
    stack.start_worker()
    stack.start_runner()
    yield stack
    stack.stop()


@pytest.fixture(scope="module")
def token(stack) -> str:
    return new_token(stack.url, "remote-lab", timeout=10)


def cli(stack, token: str | None, *args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    env = service_env(EXPAUDIT_SERVER=stack.url, PYTHONPATH=str(REPO_ROOT),
                      **({"EXPAUDIT_TOKEN": token} if token else {}))
    return subprocess.run([sys.executable, "-m", "expaudit", *args], env=env, cwd=REPO_ROOT,
                          capture_output=True, text=True, timeout=timeout)


def tree_files(directory: Path) -> dict[str, tuple[bytes, int]]:
    return {p.relative_to(directory).as_posix(): (p.read_bytes(), p.stat().st_mode & 0o777)
            for p in sorted(directory.rglob("*")) if p.is_file()}


def test_selector_input_is_the_tree_a_container_run_gets(stack, token, root, tmp_path):
    done = cli(stack, token, "selector", "input", SETTING, str(tmp_path / "in"))
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"the /input tree of {SETTING}" in done.stdout
    expected = tmp_path / "expected"
    BenchmarkCatalog(root).selector_input(SETTING, expected)  # what the selector job builds
    assert tree_files(tmp_path / "in") == tree_files(expected)
    assert json.loads((tmp_path / "in" / "setting.json").read_text())["q"] == 5 * len(STATES)


def test_selector_input_refuses_a_full_directory_and_an_unknown_setting(stack, token, tmp_path):
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("mine")
    done = cli(stack, token, "selector", "input", SETTING, str(tmp_path / "full"))
    assert done.returncode == 2 and "is not an empty directory" in done.stderr
    assert (tmp_path / "full" / "x").read_text() == "mine"
    missing = requests.get(f"{stack.url}/api/v1/settings/no-such-setting/selector-input",
                           timeout=30)
    assert missing.status_code == 404 and missing.json()["error"]["field"] == "setting_id"


def test_base_images_and_trajectories_over_http(stack, token, tmp_path):
    done = cli(stack, token, "selector", "input", SETTING, str(tmp_path / "in"))
    assert done.returncode == 0, done.stderr
    tree = tmp_path / "in"
    ids = json.loads((tree / "setting.json").read_text())["experience_ids"]
    images = requests.get(f"{stack.url}/api/v1/settings/{SETTING}/base-images", timeout=60)
    assert images.status_code == 200
    with tarfile.open(fileobj=io.BytesIO(images.content)) as tar:
        assert tar.getnames() == [f"{i}.png" for i in ids]
        for experience_id in ids:
            png = tar.extractfile(f"{experience_id}.png").read()
            assert png == (tree / "library" / experience_id / "base.png").read_bytes()
    paths = requests.get(f"{stack.url}/api/v1/settings/{SETTING}/trajectories", timeout=60).json()
    assert paths["experience_ids"] == ids
    assert paths["path_columns"] == ["x", "y", "z", "yaw", "grip", "phase"]
    for experience_id in ids:
        with np.load(tree / "library" / experience_id / "trajectory.npz") as npz:
            assert np.array_equal(np.asarray(paths["trajectories"][experience_id]["path"]),
                                  npz["path"])


def _report(stack, token: str, sid: str) -> dict:
    report = requests.get(f"{stack.url}/api/v1/submissions/{sid}/report",
                          params={"setting": SETTING},
                          headers={"Authorization": f"Bearer {token}"}, timeout=30)
    assert report.status_code == 200, report.text
    return report.json()


def _submission_id(output: str) -> str:
    return next(line.split()[0] for line in output.splitlines() if line.startswith("sub-"))


@needs_sandbox
def test_a_selector_scores_identically_locally_and_as_a_container(stack, token, tmp_path):
    assert cli(stack, token, "selector", "input", SETTING, str(tmp_path / "in")).returncode == 0
    (tmp_path / "out").mkdir()
    local = subprocess.run([sys.executable, "-m", "expaudit", "selector", "run", str(RAW32),
                            "--input", str(tmp_path / "in"), "--output", str(tmp_path / "out")],
                           capture_output=True, text=True, timeout=300, cwd=REPO_ROOT,
                           env=service_env(PYTHONPATH=str(REPO_ROOT)))
    assert local.returncode == 0, local.stdout + local.stderr
    scores = tmp_path / "out" / "scores.csv"
    as_scores = cli(stack, token, "submit", str(scores), "--setting", SETTING, "--name",
                    "raw32 run locally", "--wait")
    assert as_scores.returncode == 0, as_scores.stdout + as_scores.stderr
    as_container = cli(stack, token, "submit-selector", str(RAW32), "--setting", SETTING,
                       "--name", "raw32 container", "--public", "--wait")
    assert as_container.returncode == 0, (as_container.stdout + as_container.stderr,
                                          stack.logs())
    local_sid, container_sid = _submission_id(as_scores.stdout), _submission_id(as_container.stdout)
    local_report, container_report = _report(stack, token, local_sid), _report(stack, token,
                                                                                container_sid)
    assert container_report.pop("selector")["backend"] == "local"
    local_report.pop("selector", None)
    assert container_report == local_report

    # --wait printed the verdict and the public URL, which answers without a token
    verdict = container_report["verdict"]
    assert f"{SETTING}: {verdict['label']}" in as_container.stdout
    url = f"{stack.url}/leaderboard/reports/{container_sid}.{SETTING}.html"
    assert f"report: {url}" in as_container.stdout
    assert requests.get(url, timeout=30).status_code == 200
    # the private one says how to publish it, and `publish` prints its public URL
    assert f"expaudit publish {local_sid}" in as_scores.stdout
    published = cli(stack, token, "publish", local_sid)
    assert published.returncode == 0, published.stderr
    assert f"{stack.url}/leaderboard/reports/{local_sid}.{SETTING}.html" in published.stdout
    listed = cli(stack, token, "submissions")
    assert listed.returncode == 0
    lines = {line.split()[0]: line for line in listed.stdout.splitlines()}
    assert "container" in lines[container_sid] and "public" in lines[container_sid]
    assert "public" in lines[local_sid]
    status = cli(stack, token, "status", container_sid)
    assert f"report {SETTING}: {url}" in status.stdout, status.stdout
    shown = cli(stack, None, "report", container_sid)  # public: no token needed
    assert shown.returncode == 0, shown.stderr
    assert verdict["label"] in shown.stdout and url in shown.stdout
