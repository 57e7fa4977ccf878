"""Issue 30, item 1: the cells the service computes never lie where a selector can read them.

Runners append computed cells to the computed-cells directory (EXPAUDIT_CELLS_DIR, by
default `cells` beside a local store: `var/cells`), never to the frozen root, which may be
inside the installed package (every local-sandbox selector sees the interpreter's prefix)
or a source checkout; web and workers read the published cells and that directory. The
local sandbox refuses, before the selector starts, a run that would expose a path the
service protects (the computed cells, the store, the Redis socket, sealed cells left in
the frozen data) or that lies inside one: the service's fault, retried, never the
submitter's. The end-to-end attack on a non-editable install is in
tests/hardening/test_computed_cells_install.py.
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from benchmark_data.paths import cells_journal, sealed_cells_files
from sandbox.base import Limits, Protected, RunSpec, RunStatus, exposure_refusal
from service.process.config import (ServiceConfig, computed_cells_dir, from_env, protected_paths,
                            redis_socket, to_env)
from tests.support.compose import APP_ROLES, compose
from tests.support.selectors import SANDBOX_OK, assert_sandbox_failure_is_the_services_fault
from tests.support.tiny_frozen import copy_library, copy_query_set, experience_ids, real_data_available

needs_sandbox = pytest.mark.skipif(not SANDBOX_OK, reason="the local sandbox needs root, "
                                                           "unshare and setpriv")
needs_data = pytest.mark.skipif(not real_data_available(), reason="frozen data not built")
HIDDEN = "stack-replay-k10-hidden"
HIDDEN_STATE = "stack-hidden-s00"


# ------------------------------------------------------------- where cells go


def test_the_computed_cells_lie_beside_a_local_store_and_are_named_by_their_own_variable():
    assert computed_cells_dir(from_env({})) == Path("var/cells")  # beside the default var/store
    assert computed_cells_dir(from_env({"EXPAUDIT_STORE": "/srv/expaudit/store"})) == \
        Path("/srv/expaudit/cells")
    assert computed_cells_dir(from_env({"EXPAUDIT_STORE": "s3://bucket/prefix"})) == \
        Path("var/cells")
    named = from_env({"EXPAUDIT_CELLS_DIR": "/data/cells", "EXPAUDIT_FROZEN_ROOT": "/data/frozen"})
    assert computed_cells_dir(named) == Path("/data/cells")
    assert to_env(named)["EXPAUDIT_CELLS_DIR"] == "/data/cells"  # children agree
    assert from_env(to_env(named)) == named


def test_the_protected_paths_are_the_services_state_and_sealed_cells_in_the_frozen_root(tmp_path):
    config = from_env({"EXPAUDIT_STORE": str(tmp_path / "store"),
                       "EXPAUDIT_REDIS_URL": f"unix://{tmp_path}/redis.sock?db=0",
                       "EXPAUDIT_FROZEN_ROOT": str(tmp_path / "frozen")})
    guarded = protected_paths(config)
    assert [(p.path, p.what, p.if_present) for p in guarded[:3]] == [
        (str(tmp_path / "cells"), "the computed cells", False),
        (str(tmp_path / "store"), "the submission store", False),
        (str(tmp_path / "redis.sock"), "the Redis socket", False)]
    sealed = [p for p in guarded if p.what == "the sealed cells in the frozen data"]
    assert {p.path for p in sealed} == {str(p) for p in sealed_cells_files(tmp_path / "frozen")}
    assert str(cells_journal("replay", "stack-hidden", tmp_path / "frozen")) in {p.path for p in sealed}
    assert all(p.if_present for p in sealed)  # the published data itself is public
    s3 = protected_paths(from_env({"EXPAUDIT_STORE": "s3://b", "EXPAUDIT_REDIS_URL": "redis://r:6379/0"}))
    assert {p.what for p in s3} == {"the computed cells", "the sealed cells in the frozen data"}
    assert redis_socket("redis://127.0.0.1:6379/0") is None and redis_socket(None) is None


def test_compose_shares_the_computed_cells_on_a_volume_of_their_own():
    """Web, worker and runner read and append the same computed cells; the frozen-data
    volume (seeded from the image) only holds published data."""
    result = compose("config", "--format", "json")
    assert result.returncode == 0, result.stderr
    config = json.loads(result.stdout)
    assert "computed-cells" in config["volumes"]
    for name in APP_ROLES:
        service = config["services"][name]
        cells = str(computed_cells_dir(from_env(service["environment"])))
        assert cells == "/var/lib/expaudit/cells", name
        mount = next(v for v in service["volumes"] if v["target"] == cells)
        assert (mount["type"], mount["source"]) == ("volume", "computed-cells"), name


# ------------------------------------------------------------ the exposure rule


def test_a_bind_that_holds_a_protected_path_or_lies_inside_one_is_refused(tmp_path):
    data = tmp_path / "data"
    (data / "cells").mkdir(parents=True)
    cells = Protected(str(data / "cells"), "the computed cells")
    prefix = tmp_path / "venv"
    assert exposure_refusal([(str(prefix), "the interpreter's installation")], [cells]) is None
    reason, source, path = exposure_refusal([(str(tmp_path), "the interpreter's installation")],
                                            [cells])
    assert reason == "the interpreter's installation would show the selector the computed cells"
    assert (source, path) == (str(tmp_path), str(data / "cells"))  # for the operator's log
    inside = exposure_refusal([(str(data / "cells" / "run-1"), "the /input directory")], [cells])
    assert inside[0] == "the /input directory lies inside the computed cells"
    assert exposure_refusal([(str(data / "cells-old"), "x")], [cells]) is None  # a sibling
    assert exposure_refusal([("/", "x")], [cells]) is not None
    link = tmp_path / "link"
    link.symlink_to(data, target_is_directory=True)
    assert exposure_refusal([(str(link), "x")], [cells]) is not None  # through a link
    assert exposure_refusal([(str(data), "x")], [Protected(str(link / "cells"), "c")]) is not None


def test_sealed_cells_left_in_a_frozen_root_inside_the_prefix_are_refused_once_present(tmp_path):
    """A wheel's frozen root is inside the interpreter's prefix (public data: no refusal),
    but cells of the sealed query set written there by an older service are refused."""
    prefix = tmp_path / "venv"
    frozen = prefix / "lib" / "python3.11" / "site-packages" / "benchmark_data" / "frozen"
    (frozen / "cells").mkdir(parents=True)
    config = from_env({"EXPAUDIT_STORE": str(tmp_path / "data" / "store"),
                       "EXPAUDIT_FROZEN_ROOT": str(frozen)})
    exposed = [(str(prefix), "the interpreter's installation")]
    assert exposure_refusal(exposed, protected_paths(config)) is None
    cells_journal("replay", "stack-hidden", frozen).write_text("{}\n")
    reason = exposure_refusal(exposed, protected_paths(config))[0]
    assert reason == ("the interpreter's installation would show the selector the sealed cells "
                      "in the frozen data")


# ---------------------------------------------- the runner writes, the catalog reads


@dataclass
class _Result:
    cell: object

    def to_record(self) -> dict:
        c = self.cell
        return {"mechanism": c.mechanism, "query_set": c.query_set,
                "experience_id": c.experience_id, "state_id": c.state_id, "seed": c.seed,
                "success": 1, "state_hash": "s", "final_hash": "f", "wall_s": 0.1,
                "code_version": "sha256:test", "packages": "{}"}


@needs_data
def test_the_runner_appends_to_the_cells_dir_and_the_service_reads_it_there(tmp_path, monkeypatch):
    from service.runner import rollout_runner
    from service.catalog.catalog import open_catalog
    from service.queues.rollout_jobs import Chunk

    root = tmp_path / "frozen"
    copy_library(root, experience_ids(10))
    copy_query_set(root, "stack-hidden", [HIDDEN_STATE])
    config = ServiceConfig(store=str(tmp_path / "data" / "store"), frozen_root=str(root))
    cells_dir = computed_cells_dir(config)
    monkeypatch.setattr(rollout_runner, "chunk_executor",
                        lambda context, chunk: (lambda cells: [_Result(c) for c in cells], 1))
    context = rollout_runner.RunnerContext(root, cells_dir)
    chunk = Chunk("replay", "stack-hidden", "stack-e000", (HIDDEN_STATE,), tuple(range(5)))
    assert rollout_runner.run_chunk(context, chunk) == (5, 0)
    journal = tmp_path / "data" / "cells" / "replay__stack-hidden.journal.jsonl"
    assert len(journal.read_text().splitlines()) == 5
    assert not (root / "cells").exists()  # the frozen root is only read
    assert rollout_runner.run_chunk(context, chunk) == (0, 5)  # resumed from the cells dir
    done = open_catalog(config).completeness(HIDDEN)
    assert done.cells_done == 5 * 5  # one experience: 5 seeds x the 5 renders of the state


@needs_data
def test_cells_an_older_service_left_in_the_frozen_root_still_count(tmp_path):
    """Deployments whose frozen volume holds computed cells keep them: the readers take the
    frozen root's journal too (and the sandbox refuses to expose it, above)."""
    from service.catalog.catalog import BenchmarkCatalog

    root = tmp_path / "frozen"
    copy_library(root, experience_ids(10))
    copy_query_set(root, "stack-hidden", [HIDDEN_STATE])
    legacy = cells_journal("replay", "stack-hidden", root)
    legacy.parent.mkdir(parents=True)
    legacy.write_text(json.dumps(_Result(_Cell("stack-e001", 0)).to_record(), sort_keys=True) + "\n")
    fresh = tmp_path / "data" / "cells" / "replay__stack-hidden.journal.jsonl"
    fresh.parent.mkdir(parents=True)
    fresh.write_text(json.dumps(_Result(_Cell("stack-e002", 1)).to_record(), sort_keys=True) + "\n")
    catalog = BenchmarkCatalog(root, tmp_path / "data" / "cells")
    assert catalog.completeness(HIDDEN).cells_done == 2 * 5
    assert BenchmarkCatalog(root).completeness(HIDDEN).cells_done == 5  # published alone


@dataclass
class _Cell:
    experience_id: str
    seed: int
    mechanism: str = "replay"
    query_set: str = "stack-hidden"
    state_id: str = HIDDEN_STATE


# ------------------------------------------------------------- the refusal, for real


def _selector(tmp_path: Path) -> Path:
    """A selector that would leave a mark in /output if it ever started."""
    directory = tmp_path / "selector"
    directory.mkdir()
    (directory / "selector.py").write_text("open('/output/ran', 'w').write('yes')\n")
    return directory


@needs_sandbox
@pytest.mark.parametrize("where", ["in the interpreter's prefix", "around /input"])
def test_a_run_that_would_expose_a_protected_path_is_refused_before_the_selector_starts(
        tmp_path, where):
    from sandbox.local import LocalSandbox

    inputs, output = tmp_path / "store" / "input", tmp_path / "output"
    inputs.mkdir(parents=True)
    output.mkdir()
    if where == "around /input":
        guarded = Protected(str(tmp_path / "store"), "the submission store")
        expected = "the /input directory lies inside the submission store"
    else:  # never created: a directory a runner would make later counts all the same
        guarded = Protected(os.path.join(sys.prefix, "expaudit-cells"), "the computed cells")
        bind = "the bind of /usr" if sys.prefix.startswith("/usr/") else \
            "the interpreter's installation"
        expected = f"{bind} would show the selector the computed cells"
    sandbox = LocalSandbox(protected=(guarded,))
    try:
        result = sandbox.run(RunSpec(image=str(_selector(tmp_path)), input_dir=inputs,
                                     output_dir=output, limits=Limits(wall_seconds=5)))
    finally:
        sandbox.close()
    assert result.status is RunStatus.SETUP_FAILED
    assert result.reason == f"could not build the sandbox: {expected}"
    assert result.exit_code is None and not any(output.iterdir())  # it never ran
    for host_path in (str(tmp_path), sys.prefix, "/root"):
        assert host_path not in result.reason


@needs_sandbox
def test_the_same_sandbox_runs_when_nothing_protected_is_exposed(tmp_path):
    from sandbox.local import LocalSandbox

    inputs, output = tmp_path / "input", tmp_path / "output"
    inputs.mkdir()
    output.mkdir()
    config = from_env({"EXPAUDIT_STORE": str(tmp_path / "data" / "store")})
    sandbox = LocalSandbox(protected=protected_paths(config))
    try:
        result = sandbox.run(RunSpec(image=str(_selector(tmp_path)), input_dir=inputs,
                                     output_dir=output, limits=Limits(wall_seconds=10)))
    finally:
        sandbox.close()
    assert result.status is RunStatus.OK, result
    assert (output / "ran").read_text() == "yes"


@needs_sandbox
@needs_data
def test_a_refused_sandbox_is_retried_and_ends_as_the_services_fault(tmp_path, redis_server,
                                                                     monkeypatch):
    """Through the worker: the sandbox `make_sandbox` builds from a configuration whose
    computed cells lie in the interpreter's prefix refuses every run; the audit is retried,
    then fails with fault `infrastructure`, and nothing shown names a host path."""
    from service.selectors.run import make_sandbox

    config = ServiceConfig(store=str(tmp_path / "store"), sandbox="local",
                           cells_dir=os.path.join(sys.prefix, "expaudit-cells"))
    assert_sandbox_failure_is_the_services_fault(
        tmp_path, redis_server.url, 8, make_sandbox(config),
        "audit failed: SandboxUnavailable: the sandbox could not run the selector: could not "
        "build the sandbox: the interpreter's installation would show the selector the "
        "computed cells")
