"""The first publication of `expaudit serve`: a site at once, reference rows from the worker.

Real Redis, a real local store, the worker's jobs run in this process.
"""

from __future__ import annotations

import json

from rq import Queue

from service.process import defaults
from service.serve.embedded import publish_initial
from service.serve.first_start import BUILDING_NOTICE, publish_first
from service.process.config import ServiceConfig
from tests.support.servers import run_jobs, synthetic_setting, write_catalog


def _index(store) -> dict:
    return json.loads(store.get_bytes("leaderboard/index.json"))


def _rows(store, setting_id: str) -> list[dict]:
    return json.loads(store.get_bytes(f"leaderboard/settings/{setting_id}.json"))["rows"]


def test_serve_publishes_before_computing_any_reference_report(tmp_path, redis_server):
    """The old start computed every reference report before the web process started (78 s on
    the benchmark's data); now nothing is computed before serving."""
    summary, data = synthetic_setting("first-k4", k=4)
    config = ServiceConfig(store=str(tmp_path / "store"), redis_url=redis_server.url,
                             catalog=str(write_catalog(tmp_path / "catalog", (summary, data))))
    publish_initial(config)
    from service.store.storage import LocalStore

    store = LocalStore(tmp_path / "store")
    assert store.list_keys("baselines/") == []
    index = _index(store)
    assert index["notice"] == BUILDING_NOTICE
    assert [s["setting_id"] for s in index["settings"]] == ["first-k4"]
    assert BUILDING_NOTICE in store.get_bytes("leaderboard/index.html").decode()


def test_the_worker_rebuild_completes_the_site_and_drops_the_notice(store, redis_conn,
                                                                    catalog):
    first = publish_first(store, catalog, redis_conn)
    assert not first.kept_earlier_site and first.files_written > 0
    assert Queue(defaults.PUBLISH_QUEUE, connection=redis_conn).job_ids == [first.rebuild_job]
    assert _rows(store, "toy-k4") == []
    page = store.get_bytes("leaderboard/settings/toy-k4.html").decode()
    assert BUILDING_NOTICE in page
    run_jobs(store, redis_conn, catalog)
    assert _index(store)["notice"] is None
    rows = _rows(store, "toy-k4")
    assert sorted(r["kind"] for r in rows) == ["baseline"] * 5
    assert BUILDING_NOTICE not in store.get_bytes("leaderboard/settings/toy-k4.html").decode()


def test_an_earlier_site_is_kept_and_refreshed(store, redis_conn, catalog):
    publish_first(store, catalog, redis_conn)
    run_jobs(store, redis_conn, catalog)
    complete = store.get_bytes("leaderboard/index.json")
    again = publish_first(store, catalog, redis_conn)
    assert again.kept_earlier_site and again.files_written == 0
    assert store.get_bytes("leaderboard/index.json") == complete  # no notice over a full site
    assert Queue(defaults.PUBLISH_QUEUE, connection=redis_conn).job_ids == [again.rebuild_job]
