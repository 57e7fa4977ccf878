"""The service config from the environment, the catalogs, and the submission records."""

from __future__ import annotations

import pytest

from service.catalog.catalog import DirectoryCatalog, StaticCatalog, UnknownSetting, fingerprint
from service.submissions.records import Fault, State, Status, SubmissionRepo
from service.process.config import ServiceConfig, ConfigError, from_env, to_env
from service.store.storage import LocalStore
from tests.support.servers import synthetic_setting, write_catalog


def test_defaults_without_environment():
    config = from_env({})
    assert config.store == "var/store" and not config.is_s3
    assert config.redis_url is None and config.admin_token is None
    assert config.n_shuffles is None and config.catalog is None


def test_environment_is_read_and_round_trips():
    env = {"EXPAUDIT_STORE": "s3://bucket/prefix", "EXPAUDIT_S3_ENDPOINT": "http://127.0.0.1:9000",
           "AWS_ACCESS_KEY_ID": "k", "AWS_SECRET_ACCESS_KEY": "s", "EXPAUDIT_REDIS_URL": "redis://h:1/0",
           "EXPAUDIT_ADMIN_TOKEN": "adm", "EXPAUDIT_MAX_UPLOAD_BYTES": "1000",
           "EXPAUDIT_RATE_LIMIT_PER_MINUTE": "5", "EXPAUDIT_MAX_ACTIVE_SUBMISSIONS": "2",
           "EXPAUDIT_N_SHUFFLES": "300", "EXPAUDIT_CATALOG": "/data/settings"}
    config = from_env(env)
    assert config.is_s3 and config.max_upload_bytes == 1000 and config.n_shuffles == 300
    assert from_env(to_env(config)) == config


@pytest.mark.parametrize("name,value,message", [
    ("EXPAUDIT_MAX_UPLOAD_BYTES", "lots", "EXPAUDIT_MAX_UPLOAD_BYTES must be an integer, got 'lots'"),
    ("EXPAUDIT_RATE_LIMIT_PER_MINUTE", "0", "EXPAUDIT_RATE_LIMIT_PER_MINUTE must be >= 1, got 0"),
])
def test_bad_environment_values_are_named(name, value, message):
    with pytest.raises(ConfigError, match=message):
        from_env({name: value})


def test_overrides_reject_unknown_keys():
    with pytest.raises(ConfigError, match=r"unknown configuration key\(s\) \['stor'\]"):
        ServiceConfig().with_overrides({"stor": "x"})
    assert ServiceConfig().with_overrides({"store": "x"}).store == "x"


def test_directory_catalog_round_trips_a_setting(tmp_path):
    summary, data = synthetic_setting("dir-k3", k=3)
    catalog = DirectoryCatalog(write_catalog(tmp_path, (summary, data)))
    assert catalog.list_settings() == [summary]
    loaded = catalog.load_transfer("dir-k3")
    assert fingerprint(loaded) == fingerprint(data)
    assert catalog.completeness("dir-k3").complete
    with pytest.raises(UnknownSetting, match="dir-k9"):
        catalog.load_transfer("dir-k9")


def test_static_catalog_has_no_archives_unless_given(tmp_path):
    summary, data = synthetic_setting("st-k3", k=3)
    archive = tmp_path / "images.tar"
    archive.write_bytes(b"tar")
    catalog = StaticCatalog({summary: data}, archives={("st-k3", "images"): archive})
    assert catalog.archive_path("st-k3", "images") == archive
    assert catalog.archive_path("st-k3", "library") is None
    with pytest.raises(UnknownSetting):
        catalog.archive_path("nope", "images")


def test_status_round_trip_and_final_states():
    status = Status(state=State.FAILED, progress=0.5, reason="x", fault=Fault.SUBMITTER, attempts=2,
                    reports=("a",))
    assert Status.from_dict(status.to_dict()) == status
    assert State.PUBLISHED.is_final and State.FAILED.is_final and not State.SCORING.is_final


def test_open_marker_follows_the_state(tmp_path):
    repo = SubmissionRepo(LocalStore(tmp_path))
    repo.write_status("sub-1", Status(state=State.RUNNING))
    assert repo.open_ids() == ["sub-1"]
    repo.write_status("sub-1", Status(state=State.PUBLISHED))
    assert repo.open_ids() == []


def test_benchmark_catalog_lists_every_registry_setting():
    from benchmark_data.registry import SETTINGS
    from service.catalog.catalog import BenchmarkCatalog, DataUnavailable

    catalog = BenchmarkCatalog()
    summaries = catalog.list_settings()
    assert [s.id for s in summaries] == list(SETTINGS)
    for summary in summaries:
        done = catalog.completeness(summary.id)
        assert done.cells_total == summary.k * 200 * 5 and 0 <= done.cells_done <= done.cells_total
        try:
            data = catalog.load_transfer(summary.id)
        except DataUnavailable as exc:
            assert summary.id in str(exc)
        else:
            assert data.outcomes.shape == (summary.k, 200, 5)
    with pytest.raises(UnknownSetting, match="no-such-setting"):
        catalog.completeness("no-such-setting")


def test_record_cache_remembers_only_what_cannot_change(tmp_path):
    from service.submissions.records import Manifest, RecordCache

    store = LocalStore(tmp_path)
    cache = RecordCache(max_items=2)
    repo = SubmissionRepo(store, cache)
    for n in range(3):
        repo.create(Manifest(submission_id=f"sub-{n}", owner="o", owner_name="o", name="n",
                             settings=("s",), input_key="k", input_sha256="h", input_format="csv",
                             filename="f.csv", selection_only=False, created_at="t"))
        repo.manifest(f"sub-{n}")
    assert list(cache.manifests) == ["sub-1", "sub-2"]  # least recently used dropped
    assert repo.is_public("sub-1") is False and "sub-1" not in cache.public
    repo.make_public("sub-1")
    assert repo.is_public("sub-1") is True and "sub-1" in cache.public


def test_app_and_worker_need_a_redis_url(tmp_path):
    from service.web.app import create_app
    from service.queues.worker import build_context

    config = ServiceConfig(store=str(tmp_path))
    with pytest.raises(ValueError, match="no Redis: set EXPAUDIT_REDIS_URL or pass redis="):
        create_app(service_config=config, store=LocalStore(tmp_path))
    with pytest.raises(ValueError, match="no Redis: set EXPAUDIT_REDIS_URL"):
        build_context(config)


def test_serve_says_what_to_install_without_redis_server(tmp_path, monkeypatch):
    from service.serve.embedded import start_redis

    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(RuntimeError, match="install redis-server or set EXPAUDIT_REDIS_URL"):
        start_redis(tmp_path / "redis")


def test_admin_token_file_is_created_once_and_private(tmp_path):
    from service.serve.embedded import admin_token_file

    path = tmp_path / "var" / "admin-token"
    token = admin_token_file(path)
    assert admin_token_file(path) == token and len(token) > 40
    assert oct(path.stat().st_mode)[-3:] == "600"


def test_api_error_names_status_code_and_field():
    from expaudit_client import ApiError

    error = ApiError(422, "invalid", "format must be one of ['csv']", "format")
    assert str(error) == "HTTP 422 invalid: format must be one of ['csv'] (field 'format')"
