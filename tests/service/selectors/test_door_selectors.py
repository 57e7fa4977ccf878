"""Container submissions on a Door setting over HTTP: the service builds the Door /input tree
from the frozen Door query set and library, runs the selector in the local sandbox, audits its
scores against the Door policy cells and publishes them; on a tiny frozen root cut from the
real Door data."""

from __future__ import annotations

import json

import pytest
import requests

from benchmark_data.image_archive import base_images_path
from benchmark_data.registry import LIBRARY_IDS, get_setting
from sandbox.local import directory_digest
from service.catalog.catalog import BenchmarkCatalog
from tests.support.paths import REPO_ROOT
from tests.support.selectors import SANDBOX_OK, selector_archive
from tests.support.servers import ServiceStack, bearer, new_token
from tests.support.submissions import post_submission, wait_final
from tests.support.tiny_frozen import copy_cells, copy_library, copy_query_set, experience_ids

SETTING = "door-policy-k3-orig"
STATES = ["door-orig-s00", "door-orig-s10", "door-orig-s20", "door-orig-s30"]
"""One state per layout level (level 3 has the obstacle no library entry has)."""


def _door_data() -> bool:
    return base_images_path(LIBRARY_IDS["door"]).is_file()


pytestmark = [pytest.mark.skipif(not _door_data(), reason="frozen Door data not built")]


def _tiny_door_root(root):
    ids = experience_ids(3, "door")
    copy_library(root, ids, "door")
    copy_query_set(root, "door-orig", STATES)
    mechanism = get_setting(SETTING).mechanism_id
    assert copy_cells(root, "door-orig", ids, STATES, mechanism) == 3 * 5 * len(STATES) * 5
    return root


def test_door_settings_take_selectors_and_their_input_is_built(tmp_path):
    catalog = BenchmarkCatalog(_tiny_door_root(tmp_path / "frozen"))
    assert catalog.supports_selectors(SETTING)
    info = catalog.selector_input(SETTING, tmp_path / "input")
    assert info.task == "door" and info.experience_ids == tuple(experience_ids(3, "door"))
    assert len(info.scene_ids) == 5 * len(STATES)
    levels = {}
    for scene_id in info.scene_ids:
        meta = json.loads((tmp_path / "input" / "scenes" / scene_id / "meta.json").read_text())
        levels[meta["layout_level"]] = set(meta["object_positions"])
        assert meta["object_positions"]["door"][:2] == meta["layout"]["door"][:2]
    assert levels == {0: {"door"}, 1: {"door"}, 2: {"door"}, 3: {"door", "obstacle"}}
    for experience_id in info.experience_ids:
        folder = tmp_path / "input" / "library" / experience_id
        meta = json.loads((folder / "meta.json").read_text())
        assert set(meta["object_positions"]) == {"door"}
        assert (folder / "base.png").read_bytes().startswith(b"\x89PNG")


@pytest.fixture(scope="module")
def door_stack(tmp_path_factory, redis_server):
    directory = tmp_path_factory.mktemp("door-container")
    root = _tiny_door_root(directory / "frozen")
    stack = ServiceStack(directory, redis_server, directory / "no-catalog",
                         extra_env={"EXPAUDIT_CATALOG": "", "EXPAUDIT_FROZEN_ROOT": str(root),
                                    "EXPAUDIT_SELECTOR_WALL_SECONDS": "30"})
    stack.start_web()
    stack.start_worker()
    stack.start_runner()
    yield stack
    stack.stop()


@pytest.mark.slow
@pytest.mark.skipif(not SANDBOX_OK, reason="the local sandbox needs root, unshare and setpriv")
@pytest.mark.parametrize("example", ["raw32", "object-proximity"])
def test_door_selector_archive_is_run_audited_and_published(door_stack, example):
    stack = door_stack
    auth = bearer(new_token(stack.url, f"door-lab-{example}", timeout=10))
    source = REPO_ROOT / "examples" / "selectors" / example
    selector_input = requests.get(f"{stack.url}/api/v1/settings/{SETTING}/selector-input",
                                  timeout=30, allow_redirects=True)
    assert selector_input.status_code == 200, selector_input.text[:500]
    response = post_submission(stack.url, auth, "selector", f"{example}.tar.gz",
                               selector_archive(source), setting=SETTING,
                               name=f"{example} on door", public="true")
    assert response.status_code == 202, response.text
    sid = response.json()["id"]
    final = wait_final(stack, auth, sid)
    assert final["state"] == "published", (final, stack.logs())
    assert final["selector"]["run"]["status"] == "ok"
    report = requests.get(f"{stack.url}{final['report_urls'][SETTING]['json']}", headers=auth,
                          timeout=10).json()
    assert report["selector"]["image_digest"] == directory_digest(source)
    assert report["inputs"]["n_scenes"] == 5 * len(STATES)
    board = requests.get(f"{stack.url}/api/v1/leaderboard/{SETTING}", timeout=10).json()
    assert f"{sid}.{SETTING}" in [row["submission_id"] for row in board["rows"]]
