"""Issue 30, item 1, the attack itself: a selector that searches everything it can read for
the sealed setting's cells, run on a non-editable install of the project after a runner
has computed some of them; and a runner computing cells in a source checkout.

The project is installed for real (pip, not editable) into a fresh venv whose other
packages come from this test's environment through a `.pth` line, so the install takes
seconds; the venv's interpreter runs the runner (`expaudit runner --burst`, one chunk of
the sealed query set, on the frozen data shipped in the installed package) and the local
sandbox (`service.selectors.run.make_sandbox`), which binds that interpreter's whole
prefix, installed package included, into the selector. Before the computed-cells
directory the runner appended the sealed cells inside the package, and the selector
printed them and submitted the oracle.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import numpy as np
import pytest

from tests.support.paths import REPO_ROOT
from tests.support.servers import service_env
from tests.support.tiny_frozen import real_data_available

SANDBOX_OK = os.geteuid() == 0 and shutil.which("unshare") and shutil.which("setpriv")
pytestmark = [
    pytest.mark.sim, pytest.mark.slow,
    pytest.mark.skipif(importlib.util.find_spec("robosuite") is None,
                       reason="the runner needs the simulator (the sim extra)"),
    pytest.mark.skipif(not real_data_available(), reason="frozen data not built"),
]
HIDDEN = "stack-replay-k10-hidden"
HIDDEN_STATE = "stack-hidden-s00"
PACKAGES = ("expaudit", "leaderboard", "benchmark_data", "service", "simulator", "sandbox")

GLOB_SELECTOR = r'''
"""Hostile: reads every file it can see whose name looks like sealed cells, prints what it
found (its log goes to its owner) and scores with the outcomes it found."""
import csv
import json
import os
import sys

found = []
for dirpath, dirnames, filenames in os.walk("/"):
    if dirpath.startswith(("/proc", "/sys", "/dev")):
        dirnames[:] = []
        continue
    for name in filenames:
        if "hidden" in name and name.endswith((".jsonl", ".parquet")):
            found.append(os.path.join(dirpath, name))
print("searched / from", sys.prefix)
oracle = {}
for path in found:
    print("FOUND", path)
    if path.endswith(".jsonl"):
        try:
            with open(path) as handle:
                for line in handle:
                    print(line, end="")
                    record = json.loads(line)
                    oracle[(record["experience_id"], record["state_id"])] = record["success"]
        except (OSError, ValueError) as exc:
            print("UNREADABLE", path, exc)
with open("/input/setting.json") as handle:
    setting = json.load(handle)
with open("/output/scores.csv", "w", newline="") as handle:
    out = csv.writer(handle)
    out.writerow(["scene_id", "experience_id", "score"])
    for scene in setting["scene_ids"]:
        with open(f"/input/scenes/{scene}/meta.json") as meta:
            state = json.load(meta)["state_id"]
        for experience in setting["experience_ids"]:
            success = oracle.get((experience, state))
            out.writerow([scene, experience, 0.25 if success is None else 0.5 + success])
'''

RUN_SELECTOR = r'''
"""Run a selector on the sealed setting as the service does (its sandbox and catalog)."""
import json
import sys

import benchmark_data
from sandbox.base import Limits, RunSpec
from sandbox.execute import run_selector
from service.catalog.catalog import open_catalog
from service.process.config import from_env
from service.selectors.run import make_sandbox, run_tree

config = from_env()
sandbox = make_sandbox(config)
try:
    with run_tree(sandbox) as work:
        info = open_catalog(config).selector_input(sys.argv[2], work / "input")
        output = work / "output"
        output.mkdir()
        spec = RunSpec(image=sys.argv[1], input_dir=work / "input", output_dir=output,
                       limits=Limits(wall_seconds=180))
        run = run_selector(sandbox, spec, info.experience_ids, info.scene_ids)
finally:
    sandbox.close()
print(json.dumps({"package": benchmark_data.__file__, "result": run.result.to_dict(),
                  "scores": None if run.scores is None else run.scores.scores.tolist()}))
'''


def _sources(target: Path) -> Path:
    """The project's files as a checkout holds them (tracked, and new files not ignored):
    a copy, so that building the wheel writes nothing into the checkout."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                            cwd=REPO_ROOT, capture_output=True, check=True).stdout.decode()
    for name in filter(None, listed.split("\0")):
        source = REPO_ROOT / name
        if not source.is_file():  # deleted in the working tree
            continue
        path = target / name
        path.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, path)
    return target


def _install(tmp_path: Path) -> Path:
    """A venv holding a non-editable install of the project; returns its interpreter."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    site = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                          capture_output=True, text=True, check=True).stdout.strip()
    # the dependencies (and pip, setuptools) of this environment, after the venv's own packages
    (Path(site) / "_expaudit_test_deps.pth").write_text(sysconfig.get_path("purelib") + "\n")
    source = _sources(tmp_path / "src")
    done = subprocess.run([str(python), "-m", "pip", "install", "--no-deps", "--no-build-isolation",
                           "--no-index", "--no-cache-dir", "--disable-pip-version-check", "-q",
                           str(source)], capture_output=True, text=True, timeout=300,
                          env=_clean_env())
    assert done.returncode == 0, done.stdout + done.stderr
    shutil.rmtree(source)
    return python


def _clean_env(**extra: str) -> dict[str, str]:
    env = service_env(**extra)
    for name in ("PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP"):
        env.pop(name, None)
    return env


def _fill_one_chunk(python: Path, cwd: Path, env: dict[str, str], redis_url: str) -> None:
    """Queue one chunk of the sealed setting (one state, two seeds) and let `expaudit runner
    --burst`, run by `python` in `cwd`, compute it."""
    import redis

    from benchmark_data.registry import get_setting
    from service.queues.rollout_jobs import Chunk, ensure_chunks

    connection = redis.Redis.from_url(redis_url)
    connection.flushdb()
    chunk = Chunk("replay", "stack-hidden", get_setting(HIDDEN).experience_ids[0],
                  (HIDDEN_STATE,), (0, 1))
    ensure_chunks(connection, (chunk,))
    connection.close()
    done = subprocess.run([str(python), "-m", "expaudit", "runner", "--burst"], cwd=cwd,
                          env={**env, "EXPAUDIT_REDIS_URL": redis_url, "EXPAUDIT_SANDBOX": "none"},
                          capture_output=True, text=True, timeout=400)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]


def _chunks(directory: Path) -> list[Path]:
    """The computed-cells chunks of the sealed setting anywhere under `directory` (a local
    store keeps them as files: `service.store.computed_cells`)."""
    return sorted(directory.rglob("computed/replay__stack-hidden/chunks/*.jsonl"))


@pytest.mark.skipif(not SANDBOX_OK, reason="the local sandbox needs root, unshare and setpriv")
def test_a_selector_on_a_wheel_install_finds_none_of_the_computed_sealed_cells(tmp_path,
                                                                               redis_server):
    python = _install(tmp_path)
    data = tmp_path / "data"  # the service's data directory: store and computed cells
    env = _clean_env(EXPAUDIT_STORE=str(data / "store"))
    work = tmp_path / "work"
    work.mkdir()
    _fill_one_chunk(python, work, env, redis_server.url.rsplit("/", 1)[0] + "/9")
    chunks = _chunks(tmp_path)  # the runner computed the two cells, somewhere
    records = [json.loads(line) for chunk in chunks for line in chunk.read_text().splitlines()]
    assert len(records) == 2

    selector = tmp_path / "glob-selector"
    selector.mkdir()
    (selector / "selector.py").write_text(GLOB_SELECTOR)
    script = tmp_path / "run_selector.py"
    script.write_text(RUN_SELECTOR)
    done = subprocess.run([str(python), str(script), str(selector), HIDDEN], cwd=work, env=env,
                          capture_output=True, text=True, timeout=400)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    outcome = json.loads(done.stdout.splitlines()[-1])
    package = Path(outcome["package"])
    assert package.is_relative_to(tmp_path / "venv")  # the installed copy ran, not the checkout
    result = outcome["result"]
    assert result["status"] == "ok", result
    shown = result["stdout_tail"] + result["stderr_tail"]
    assert "searched / from" in shown  # it did search
    assert "FOUND" not in shown, shown[-3000:]
    for record in records:
        assert record["final_hash"] not in shown and record["state_hash"] not in shown
    assert np.all(np.asarray(outcome["scores"]) == 0.25)  # no outcome reached its scores
    assert all(c.is_relative_to(data / "store") for c in chunks), chunks  # in the store
    assert not _chunks(package.parent)  # nothing computed inside the installed package


def test_a_runner_in_a_checkout_leaves_git_status_clean(tmp_path, redis_server):
    """`make serve` runs in the checkout: computed cells go under its ignored `var/`, never
    into the tracked frozen data."""
    checkout = _sources(tmp_path / "checkout")
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false"]
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "checkout"]):
        subprocess.run(git + args, cwd=checkout, check=True, capture_output=True)
    env = {**_clean_env(), "PYTHONPATH": str(checkout)}  # `make serve`'s defaults: var/store
    _fill_one_chunk(Path(sys.executable), checkout, env, redis_server.url.rsplit("/", 1)[0] + "/10")
    status = subprocess.run(["git", "status", "--porcelain", "--untracked-files=all"],
                            cwd=checkout, capture_output=True, text=True, check=True).stdout
    assert status == "", status
    chunks = _chunks(checkout)
    assert chunks and all(c.is_relative_to(checkout / "var" / "store") for c in chunks), chunks
