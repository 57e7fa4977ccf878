"""The multi-host deployment files: Redis asks for a password, Redis and the store are published
only with compose.expose.yaml, and compose.runner.yaml starts runners alone, reaching nothing
but the main host's Redis and store (docs/self_hosting.md, "More hosts")."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from urllib.parse import urlsplit

import pytest
import redis

from service.process.config import computed_cells_dir, from_env
from service.queues.worker import connect_redis
from tests.support.compose import APP_ROLES, COMPOSE
from tests.support.paths import REPO_ROOT
from tests.support.servers import ProcessServer, free_port, wait_for_port

RUNNER_ENV = {"EXPAUDIT_REDIS_URL": "redis://:s3cret@main.example.org:6379/0",
              "EXPAUDIT_S3_ENDPOINT": "https://s3.example.org",
              "AWS_ACCESS_KEY_ID": "runner-host", "AWS_SECRET_ACCESS_KEY": "runner-secret"}


def _config(*files: str, profiles: tuple[str, ...] = (), **env: str) -> subprocess.CompletedProcess:
    args = [COMPOSE]
    for name in files:
        args += ["-f", str(REPO_ROOT / name)]
    for profile in profiles:
        args += ["--profile", profile]
    return subprocess.run([*args, "config", "--format", "json"], capture_output=True, text=True,
                          cwd=REPO_ROOT, timeout=60,
                          env={"PATH": os.environ["PATH"], "HOME": os.environ.get("HOME", "/tmp"),
                               **env})


def _services(*files: str, **kwargs) -> dict:
    result = _config(*files, **kwargs)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)["services"]


def test_redis_asks_for_the_password_the_app_connects_with():
    services = _services("compose.yaml")
    command = services["redis"]["command"]
    password = command[command.index("--requirepass") + 1]
    assert services["redis"]["environment"]["REDISCLI_AUTH"] == password  # the health check
    for name in APP_ROLES:
        url = from_env(services[name]["environment"]).redis_url
        assert urlsplit(url).password == password, name
    other = _services("compose.yaml", REDIS_PASSWORD="chosen1")["redis"]["command"]
    assert other[other.index("--requirepass") + 1] == "chosen1"


def test_redis_and_the_store_are_published_only_when_the_operator_opts_in():
    base = _services("compose.yaml")
    assert "ports" not in base["redis"] and "ports" not in base["minio"]
    exposed = _services("compose.yaml", "compose.expose.yaml", EXPAUDIT_EXPOSE_ADDR="10.8.0.1")
    assert [(p["host_ip"], p["target"]) for p in exposed["redis"]["ports"]] == [("10.8.0.1", 6379)]
    assert [(p["host_ip"], p["target"]) for p in exposed["minio"]["ports"]] == [("10.8.0.1", 9000)]
    local = _services("compose.yaml", "compose.expose.yaml")  # no address: this host only
    assert {p["host_ip"] for s in ("redis", "minio") for p in local[s]["ports"]} == {"127.0.0.1"}


def test_a_runner_host_needs_the_redis_url_and_the_store_credentials():
    for missing in RUNNER_ENV:
        env = {k: v for k, v in RUNNER_ENV.items() if k != missing}
        result = _config("compose.runner.yaml", profiles=("cpu",), **env)
        assert result.returncode != 0 and missing in result.stderr, (missing, result.stderr)


def test_runner_hosts_start_runners_alone_sharing_only_redis_and_the_store():
    services = _services("compose.runner.yaml", profiles=("cpu", "gpu"), EXPAUDIT_RUNNERS="4",
                         **RUNNER_ENV)
    assert set(services) == {"runner-cpu", "runner-gpu0", "runner-gpu1"}
    assert services["runner-cpu"]["deploy"]["replicas"] == 4  # one per core
    gpus = [services[name]["deploy"]["resources"]["reservations"]["devices"][0]["device_ids"]
            for name in ("runner-gpu0", "runner-gpu1")]
    assert gpus == [["0"], ["1"]]  # one per GPU, each its own
    for name, service in services.items():
        assert service["command"] == ["runner", "--sync-frozen"], name  # the store's data
        config = from_env(service["environment"])
        assert config.redis_url == RUNNER_ENV["EXPAUDIT_REDIS_URL"]
        assert config.is_s3 and config.s3_endpoint == RUNNER_ENV["EXPAUDIT_S3_ENDPOINT"]
        volumes = {v["target"]: v for v in service["volumes"]}
        assert volumes[config.frozen_root]["type"] == "volume"  # this host's own copy
        assert str(computed_cells_dir(config)) not in volumes  # no shared cells directory
        assert not service.get("depends_on"), name
    assert set(_services("compose.runner.yaml", **RUNNER_ENV)) == set()  # a profile picks them


@pytest.fixture()
def password_redis(tmp_path):
    port = free_port()
    binary = shutil.which("redis-server") or "/usr/bin/redis-server"
    server = ProcessServer([binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                            "--requirepass", "expaudit-change-me"], tmp_path / "redis.log").start()
    wait_for_port(port, 10, server.proc, server.log)
    yield port
    server.stop()


def test_the_app_authenticates_to_redis_with_the_compose_url(password_redis):
    url = from_env(_services("compose.yaml")["worker"]["environment"]).redis_url
    here = url.replace("@redis:6379", f"@127.0.0.1:{password_redis}")
    assert connect_redis(here).ping()
    with pytest.raises(redis.AuthenticationError):
        redis.Redis(port=password_redis).ping()
