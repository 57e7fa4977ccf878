"""Programs on a readout setting over real HTTP: gunicorn, an RQ worker (publishing), a runner
(the `selectors` queue) and redis-server; the program runs in the local namespace sandbox on
the small synthetic bank given image shards (`tests.support.readout_shards`).

A program's features give the report of the same features uploaded as a file; the /input
tree it ran on is the one `expaudit readout input` downloads; a program that fails is the
submitter's fault, named, with its run shown to its owner and its sealed quota given back.
"""

from __future__ import annotations

import importlib.util
import io
import json
import subprocess
import sys

import numpy as np
import pytest
import requests

from service.catalog.readout import ReadoutCatalog
from service.catalog.readout_input import prepare_readout_setting_input
from tests.support.paths import REPO_ROOT
from tests.support.readout_shards import add_images
from tests.support.readout_service import SETTING, features_npz, readout_root
from tests.support.selectors import SANDBOX_OK, selector_archive
from tests.support.servers import ServiceStack, bearer, new_token, synthetic_setting, write_catalog
from tests.support.submissions import post_submission, wait_final

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not SANDBOX_OK, reason="the local sandbox needs root, unshare and setpriv")]

PROGRAM = REPO_ROOT / "examples" / "readout_programs" / "pooled8"


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    files = readout_root(tmp_path_factory.mktemp("readout"))
    add_images(files["frozen"] / "readout" / "door-v1", files["labels"])
    return files


@pytest.fixture(scope="module")
def stack(tmp_path_factory, redis_server, files):
    directory = tmp_path_factory.mktemp("programs")
    catalog = write_catalog(directory / "catalog", synthetic_setting("toy-k4", k=4))
    stack = ServiceStack(directory, redis_server, catalog, extra_env={
        "EXPAUDIT_FROZEN_ROOT": str(files["frozen"]), "EXPAUDIT_READOUT_SEALED": str(files["sealed_dir"]),
        "EXPAUDIT_SEALED_SUBMISSIONS_PER_DAY": "3", "EXPAUDIT_SELECTOR_WALL_SECONDS": "30"})
    stack.start_web(workers=1)
    stack.start_worker()
    stack.start_runner()
    yield stack
    stack.stop()


@pytest.fixture(scope="module")
def auth(stack):
    return bearer(new_token(stack.url, "readout-programs", timeout=30))


def _program_module():
    spec = importlib.util.spec_from_file_location("pooled8", PROGRAM / "selector.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _report(stack, auth, status: dict) -> dict:
    response = requests.get(f"{stack.url}{status['report_urls'][SETTING]['json']}", headers=auth, timeout=30)
    assert response.status_code == 200, response.text
    return response.json()


def _program(stack, auth, directory, name: str) -> dict:
    created = post_submission(stack.url, auth, "selector", f"{name}.tar.gz", selector_archive(directory),
                              setting=SETTING, name=name)
    assert created.status_code == 202, created.text
    assert created.json()["kind"] == "features" and created.json()["selector"]["backend"] == "local"
    return wait_final(stack, auth, created.json()["id"], timeout=240)


def test_a_program_gives_the_report_of_its_features_uploaded(stack, auth, tmp_path):
    status = _program(stack, auth, PROGRAM, "pooled8")
    assert status["state"] == "published", f"{status}\n{stack.logs()}"
    assert status["selector"]["run"]["status"] == "ok"
    by_program = _report(stack, auth, status)
    assert by_program["selector"]["status"] == "ok" and by_program["selector"]["backend"] == "local"

    downloaded = stack.run_cli("readout", "input", SETTING, str(tmp_path / "in"), "--server", stack.url)
    assert downloaded.returncode == 0, downloaded.stderr
    program = _program_module()
    setting = json.loads((tmp_path / "in" / "setting.json").read_text())
    parts = [program.features(tmp_path / "in" / "images" / f"{split}.npz") for split in setting["splits"]]
    upload = features_npz(np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts]))
    created = requests.post(f"{stack.url}/api/v1/submissions", headers=auth, timeout=60,
                            files={"file": ("pooled8.npz", upload)}, data={"setting": SETTING, "name": "pooled8"})
    assert created.status_code == 202, created.text
    uploaded = wait_final(stack, auth, created.json()["id"])
    assert uploaded["state"] == "published", uploaded
    by_upload = _report(stack, auth, uploaded)
    program_row, upload_row = by_program["representations"][0], by_upload["representations"][0]
    assert program_row["readout"] == upload_row["readout"] and program_row["readout"]["n_features"] == 384
    assert program_row["summary"] == upload_row["summary"]
    assert by_program["primary_tests"] == by_upload["primary_tests"]
    assert "selector" not in by_upload


def test_the_downloaded_input_is_the_tree_a_program_is_given(stack, files, tmp_path):
    downloaded = stack.run_cli("readout", "input", SETTING, str(tmp_path / "in"), "--server", stack.url)
    assert downloaded.returncode == 0, downloaded.stderr
    assert f"the /input tree of {SETTING}" in downloaded.stdout
    built = tmp_path / "built"
    prepare_readout_setting_input(ReadoutCatalog(files["frozen"], files["sealed_dir"]), SETTING, built)
    names = sorted(p.relative_to(built).as_posix() for p in built.rglob("*"))
    assert names == sorted(p.relative_to(tmp_path / "in").as_posix() for p in (tmp_path / "in").rglob("*"))
    assert names == ["images", "images/confirm.npz", "images/dev.npz", "images/train.npz", "labels.csv",
                     "setting.json"]
    for name in names:
        if (built / name).is_file():
            assert (built / name).read_bytes() == (tmp_path / "in" / name).read_bytes(), name
    labels = (built / "labels.csv").read_text()
    assert ",confirm," not in labels and ",eval," not in labels  # sealed labels never given
    with np.load(built / "images" / "confirm.npz") as z:
        confirm = set(z["observation_id"].tolist())
    sealed = files["labels"][files["labels"]["split"] == "confirm"]
    imaged = sealed[(sealed["kind"] == "natural") | sealed["admitted"]]
    assert confirm == set(imaged["observation_id"])


def _broken(tmp_path, body: str):
    directory = tmp_path / "broken"
    directory.mkdir()
    (directory / "selector.py").write_text(body)
    (directory / "selector.py").chmod(0o644)
    return directory


def test_a_crashing_program_fails_as_the_submitters_fault_with_its_run_shown(stack, auth, tmp_path):
    program = _broken(tmp_path, "import sys\nprint('reading /input')\nraise SystemExit('no model here')\n")
    status = _program(stack, auth, program, "crashes")
    assert status["state"] == "failed" and status["fault"] == "submitter", status
    assert status["reason"].startswith("program crashed: exited with code 1")
    assert status["reason"].endswith("not counted against the day's sealed quota")
    run = requests.get(f"{stack.url}/api/v1/submissions/{status['id']}/run", headers=auth, timeout=10).json()
    assert run["status"] == "crashed" and "reading /input" in run["stdout_tail"]
    assert "no model here" in run["stderr_tail"]


def test_features_the_reader_refuses_are_named_from_the_output_file(stack, auth, tmp_path):
    program = _broken(tmp_path, (
        "import json, os, numpy as np\n"
        "root, out = os.environ['EXPAUDIT_INPUT'], os.environ['EXPAUDIT_OUTPUT']\n"
        "with np.load(root + '/images/train.npz') as z:\n"
        "    ids = z['observation_id']\n"
        "values = np.ones((len(ids), 2)); values[3, 1] = np.nan\n"
        "np.savez(out + '/features.npz', observation_id=ids, features=values)\n"))
    status = _program(stack, auth, program, "nan")
    assert status["state"] == "failed" and status["fault"] == "submitter", status
    assert "program output_invalid: /output/features.npz line 5, field 'f1': value 'nan'" in status["reason"]


def test_a_program_where_none_is_taken_is_refused_and_nothing_is_stored(stack, auth, files):
    archive = selector_archive(PROGRAM)
    wrong_input = post_submission(stack.url, auth, "selector", "p.tar.gz", archive, setting=SETTING,
                                  input="predictions")
    assert wrong_input.status_code == 422 and wrong_input.json()["error"]["field"] == "input"
    not_a_program = post_submission(stack.url, auth, "selector", "p.tar.gz", b"not a gzip", setting=SETTING)
    assert not_a_program.status_code == 422 and not_a_program.json()["error"]["field"] == "selector"
    image = requests.post(f"{stack.url}/api/v1/submissions", headers=auth, timeout=30,
                          data={"setting": SETTING}, files={"image": (None, "lab/p@sha256:" + "a" * 64)})
    assert image.status_code == 422 and image.json()["error"]["field"] == "image"


def test_submit_selector_waits_and_prints_the_headline_numbers(stack):
    token = new_token(stack.url, "readout-cli", timeout=30)  # an owner of its own: its own quota
    done = stack.run_cli("submit-selector", str(PROGRAM), "--setting", SETTING, "--name", "pooled8", "--wait",
                         "--server", stack.url, "--token", token, timeout=300)
    assert done.returncode == 0, done.stderr + done.stdout + stack.logs()
    lines = done.stdout.splitlines()
    headline = next(line for line in lines if line.startswith(f"{SETTING}: pooled8: natural MAE "))
    assert "controlled MAE" in headline and "gain error" in headline and "context sensitivity" in headline
    assert any(line.startswith("  report: ") and line.endswith("&format=html") for line in lines), done.stdout
