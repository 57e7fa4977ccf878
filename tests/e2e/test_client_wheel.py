"""The client as a submitter installs it: the expaudit-client wheel built from client/, put
into a fresh virtual environment of Python 3.11, 3.12 and 3.13 with nothing else (no index:
it has no dependencies), and used there to submit a scores file to a running service."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.paths import REPO_ROOT
from tests.support.servers import (ADMIN_TOKEN, ServiceStack, scores_csv, service_env,
                                   synthetic_setting, write_catalog)

pytestmark = pytest.mark.slow

VERSIONS = ("3.11", "3.12", "3.13")

SUBMIT = """
import json, sys
from importlib import metadata
import expaudit_client
from expaudit_client import Client

server, token, path, setting = sys.argv[1:5]
client = Client(server, token)
status = client.submit(path, [setting], name="wheel client " + sys.version.split()[0])
final = client.wait(status["id"], timeout=120)
report = client.report(final["id"], setting)
print(json.dumps({
    "python": "%d.%d" % sys.version_info[:2], "module": expaudit_client.__file__,
    "state": final["state"], "reason": final.get("reason"), "verdict": report.get("verdict"),
    "requires": metadata.requires("expaudit-client"),
    "urls": metadata.metadata("expaudit-client").get_all("Project-URL"),
    "installed": sorted(d.metadata["Name"] for d in metadata.distributions()),
}))
"""


def _interpreter(version: str) -> str | None:
    """`pythonX.Y` on PATH, else pyenv's build of it; None when neither runs."""
    candidates = [shutil.which(f"python{version}")]
    pyenv = shutil.which("pyenv")
    if pyenv:
        root = subprocess.run([pyenv, "root"], capture_output=True, text=True).stdout.strip()
        candidates += sorted(Path(root, "versions").glob(f"{version}.*/bin/python{version}"),
                             reverse=True)
    for candidate in filter(None, candidates):
        done = subprocess.run([str(candidate), "-c", "import sys; print('%d.%d' % "
                               "sys.version_info[:2])"], capture_output=True, text=True)
        if done.returncode == 0 and done.stdout.strip() == version:
            return str(candidate)
    return None


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """The wheel, built from a copy of client/ and expaudit_client/ (the checkout stays clean)."""
    source = tmp_path_factory.mktemp("client-source")
    junk = shutil.ignore_patterns("build", "*.egg-info", "__pycache__")
    for folder in ("client", "expaudit_client"):
        shutil.copytree(REPO_ROOT / folder, source / folder, ignore=junk)
    dist = tmp_path_factory.mktemp("dist")
    done = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-index",
                           "--no-build-isolation", "-w", str(dist), str(source / "client")],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    (built,) = dist.glob("expaudit_client-*-py3-none-any.whl")
    return built


@pytest.fixture(scope="module")
def stack(tmp_path_factory, redis_server):
    directory = tmp_path_factory.mktemp("wheel-stack")
    setting = synthetic_setting("wheel-k4", k=4, n_states=6, draws=2, seeds=3)
    stack = ServiceStack(directory, redis_server, write_catalog(directory / "catalog", setting))
    stack.start_web(workers=1)
    stack.start_worker()
    yield stack, setting
    stack.stop()


@pytest.mark.parametrize("version", VERSIONS)
def test_the_wheel_installs_alone_and_submits(version, wheel, stack, tmp_path):
    python = _interpreter(version)
    if python is None:
        pytest.skip(f"no Python {version} interpreter here (python{version} on PATH or pyenv)")
    service, (summary, data) = stack
    venv = tmp_path / "venv"
    subprocess.run([python, "-m", "venv", str(venv)], check=True, timeout=300)
    install = subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "--no-index",
                              "--disable-pip-version-check", str(wheel)],
                             capture_output=True, text=True, timeout=300)
    assert install.returncode == 0, install.stdout + install.stderr

    import requests

    token = requests.post(f"{service.url}/api/v1/tokens", json={"name": f"py{version}",
                          "owner": f"py{version}"}, headers={"Authorization": f"Bearer {ADMIN_TOKEN}"},
                          timeout=10).json()["token"]
    scores = tmp_path / "scores.csv"
    scores.write_bytes(scores_csv(data))
    done = subprocess.run([str(venv / "bin" / "python"), "-c", SUBMIT, service.url, token,
                           str(scores), summary.id], cwd=tmp_path, env=service_env(),
                          capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr + "\n" + service.logs()
    result = json.loads(done.stdout)
    assert result["python"] == version
    assert Path(result["module"]).is_relative_to(venv), result["module"]
    assert result["state"] == "published", result
    assert result["verdict"], result
    assert not result["requires"], "the client must need nothing beyond the standard library"
    assert set(result["installed"]) - {"pip", "setuptools"} == {"expaudit-client"}, result
    assert any("arxiv.org/abs/2609.26567" in url for url in result["urls"]), result["urls"]
