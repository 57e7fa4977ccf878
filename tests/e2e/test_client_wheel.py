"""The client as a submitter installs it: the expaudit-client wheel the server serves
(`pip install URL`, the same package as the one setuptools builds from client/), put into a
fresh virtual environment of Python 3.11, 3.12 and 3.13 with nothing else (no index: it has
no dependencies), and used there to submit a scores file to a running service, from
Python and with its `expaudit-client` command (a file refused before sending, a submission
followed to its report, a selector run locally on an /input tree and its scores checked)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from sandbox.demo import demo_input
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


SELECTOR = """
import csv, json, os
from pathlib import Path

root, out = Path(os.environ["EXPAUDIT_INPUT"]), Path(os.environ["EXPAUDIT_OUTPUT"])
setting = json.loads((root / "setting.json").read_text())
with open(out / "scores.csv", "w", newline="") as handle:
    writer = csv.writer(handle)
    writer.writerow(["scene_id", "experience_id", "score"])
    for n, scene_id in enumerate(setting["scene_ids"]):
        for experience_id in setting["experience_ids"][:None if "{full}" == "yes" else -1]:
            writer.writerow([scene_id, experience_id, repr(float(n))])
"""
"""A selector on the standard library: every pair when `full` is yes, else one short."""


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


@pytest.fixture(scope="module")
def input_tree(tmp_path_factory) -> Path:
    """An /input tree as the service writes it (the sandbox's demo setting)."""
    tree = tmp_path_factory.mktemp("input-tree") / "input"
    demo_input(tree)
    return tree


def _command(venv: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess:
    """`expaudit-client ARGS` from the venv's bin/, with no server or token in the environment."""
    env = {key: value for key, value in service_env().items()
           if key not in ("EXPAUDIT_SERVER", "EXPAUDIT_TOKEN")}
    return subprocess.run([str(venv / "bin" / "expaudit-client"), *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=240)


@pytest.mark.parametrize("version", VERSIONS)
def test_the_wheel_installs_alone_and_submits(version, wheel, stack, input_tree, tmp_path):
    python = _interpreter(version)
    if python is None:
        pytest.skip(f"no Python {version} interpreter here (python{version} on PATH or pyenv)")
    service, (summary, data) = stack
    venv = tmp_path / "venv"
    subprocess.run([python, "-m", "venv", str(venv)], check=True, timeout=300)
    import requests

    served = requests.get(f"{service.url}/client/", timeout=10).json()
    assert served["install"] == f"pip install {service.url}/client/{wheel.name}", served
    install = subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "--no-index",
                              "--disable-pip-version-check", served["url"]],
                             capture_output=True, text=True, timeout=300)
    assert install.returncode == 0, install.stdout + install.stderr

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

    # The command: a file with a bad score is refused before a byte is sent.
    flags = ("--server", service.url, "--token", token)
    bad = tmp_path / "bad.csv"
    lines = scores.read_text().splitlines()
    last = lines[-1].split(",")
    last[lines[0].split(",").index("score")] = "nan"
    bad.write_text("\n".join(lines[:-1] + [",".join(last)]) + "\n")
    refused = _command(venv, "submit", str(bad), "--setting", summary.id, *flags, cwd=tmp_path)
    assert refused.returncode == 2, refused.stdout + refused.stderr
    assert refused.stderr.startswith("expaudit-client submit: error: "), refused.stderr
    assert "field 'score': value 'nan' is not a finite number" in refused.stderr
    mine = requests.get(f"{service.url}/api/v1/submissions", timeout=10,
                        headers={"Authorization": f"Bearer {token}"}).json()["submissions"]
    assert len(mine) == 1, "the refused file reached the server"

    # ... a good one is sent and followed to its report.
    sent = _command(venv, "submit", str(scores), "--setting", summary.id, "--name",
                    f"command {version}", "--wait", *flags, cwd=tmp_path)
    assert sent.returncode == 0, sent.stdout + sent.stderr + service.logs()
    assert "published" in sent.stdout and f"{summary.id}: " in sent.stdout, sent.stdout
    assert "report: " + service.url in sent.stdout, sent.stdout
    listed = _command(venv, "submissions", *flags, cwd=tmp_path)
    assert listed.returncode == 0 and f"command {version}" in listed.stdout, listed.stdout

    # ... and a selector runs locally on an /input tree, its scores checked like the service's.
    for full, status, code in (("yes", "ok", 0), ("no", "output_invalid", 1)):
        selector = tmp_path / f"selector-{full}"
        selector.mkdir()
        (selector / "selector.py").write_text(SELECTOR.replace("{full}", full))
        ran = _command(venv, "selector", "run", str(selector), "--input", str(input_tree),
                       "--output", str(tmp_path / f"out-{full}"), cwd=tmp_path)
        assert ran.returncode == code, ran.stdout + ran.stderr
        run = json.loads(ran.stdout)
        assert run["status"] == status, run
    assert run["reason"].startswith("/output/scores.csv, field 'scene_id, experience_id'"), run


def _members(data: bytes) -> dict[str, bytes]:
    import io
    import zipfile

    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        return {name: archive.read(name) for name in archive.namelist()}


def _fields(metadata: bytes) -> set[str]:
    keys = ("Name", "Version", "Requires-Python", "Project-URL", "Requires-Dist")
    return {line for line in metadata.decode().splitlines() if line.split(":")[0] in keys}


def test_the_served_wheel_is_the_package_setuptools_builds(wheel, stack):
    """Same modules byte for byte, same name, version, Python range, links and command."""
    import requests

    service, _ = stack
    reply = requests.get(f"{service.url}/client/{wheel.name}", timeout=30)
    assert reply.status_code == 200, reply.text
    served, built = _members(reply.content), _members(wheel.read_bytes())
    assert reply.headers["X-Checksum-Sha256"] == __import__("hashlib").sha256(reply.content).hexdigest()
    modules = {name: data for name, data in built.items() if name.startswith("expaudit_client/")}
    assert {name: data for name, data in served.items() if name.startswith("expaudit_client/")} == modules
    info = next(name.split("/")[0] for name in built if name.endswith(".dist-info/METADATA"))
    assert _fields(served[f"{info}/METADATA"]) == _fields(built[f"{info}/METADATA"])
    entry_points = {line.replace(" ", "") for line in built[f"{info}/entry_points.txt"].decode().splitlines()}
    assert {line.replace(" ", "") for line in served[f"{info}/entry_points.txt"].decode().splitlines()} \
        == entry_points
    missing = requests.get(f"{service.url}/client/expaudit_client-0.0.0-py3-none-any.whl", timeout=10)
    assert missing.status_code == 404 and missing.json()["error"]["code"] == "not_available"
