"""Deployment files: compose.yaml (Compose v2), the Dockerfile (hadolint), the
container entrypoint and health check, and the nginx front door's routing."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
import tomllib
from pathlib import Path

import pytest
import requests

from service.process.config import from_env, to_env
from tests.support.compose import APP_ROLES, COMPOSE, compose
from tests.support.servers import ProcessServer, RedisServer, free_port, wait_for_port
from tests.support.paths import REPO_ROOT

ROOT = REPO_ROOT
VENV_BIN = Path(sys.executable).parent
HADOLINT = str(VENV_BIN / "hadolint")
ENTRYPOINT = ROOT / "docker" / "entrypoint.sh"
HEALTHCHECK = ROOT / "docker" / "healthcheck.py"
NGINX_TEMPLATE = ROOT / "docker" / "nginx" / "default.conf.template"
CPU_ROLES = ("web", "worker")
LONG_RUNNING = ("web", "worker", "runner", "redis", "minio", "static")


@pytest.fixture(scope="module")
def config() -> dict:
    result = compose("config", "--format", "json")
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


# ------------------------------------------------------------------ compose --

def test_compose_file_is_valid():
    result = compose("config", "-q")
    assert result.returncode == 0, result.stderr
    assert result.stdout == ""


def test_compose_validation_reports_a_broken_file(tmp_path):
    broken = tmp_path / "compose.yaml"
    broken.write_text((ROOT / "compose.yaml").read_text().replace("    command: [\"web\"]",
                                                                   "    comand: [\"web\"]", 1))
    result = compose("config", "-q", file=broken)
    assert result.returncode != 0
    assert "comand" in result.stderr


def test_app_roles_pick_the_role_by_command_from_the_dockerfile_stages(config):
    """web and worker share the CPU image; the runner has the GPU stage of the same Dockerfile."""
    services = config["services"]
    assert len({services[name]["image"] for name in CPU_ROLES}) == 1
    assert services["runner"]["image"] != services["web"]["image"]
    stages = dockerfile_stages()
    for name in APP_ROLES:
        assert services[name]["command"] == [name]
        assert services[name]["build"]["context"] == str(ROOT)
        assert services[name]["build"]["dockerfile"] == "Dockerfile"
        assert services[name]["build"]["target"] in stages, name
    assert {services[name]["build"]["target"] for name in CPU_ROLES} == {"app"}
    assert services["runner"]["build"]["target"] == "runner-gpu"


def test_runner_alone_has_the_gpu_and_the_docker_socket(config):
    """The runner serves `selectors` (the selector containers) and `rollouts` (the GPU)."""
    services = config["services"]
    devices = services["runner"]["deploy"]["resources"]["reservations"]["devices"]
    assert devices == [{"capabilities": ["gpu"], "driver": "nvidia", "count": 1}]
    for name, service in services.items():
        sources = [v.get("source") for v in service.get("volumes", [])]
        assert ("/var/run/docker.sock" in sources) == (name == "runner"), name
        assert ("group_add" in service) == (name == "runner"), name
        if name != "runner":
            assert "deploy" not in service or "devices" not in json.dumps(service["deploy"]), name
    runner = services["runner"]
    assert from_env(runner["environment"]).sandbox == "docker"
    workdir = runner["environment"]["TMPDIR"]
    assert {"type": "bind", "source": workdir, "target": workdir}.items() <= \
        next(v for v in runner["volumes"] if v["target"] == workdir).items()
    assert runner["group_add"] == ["999"]
    assert "TMPDIR" not in services["worker"]["environment"]
    assert from_env(services["worker"]["environment"]).worker_queues == ("publish", "audit")


def test_runner_runs_policies_on_the_gpu(config):
    """MuJoCo renders through the GPU's EGL and the policies infer on `cuda` in batches."""
    services = config["services"]
    runner = services["runner"]["environment"]
    assert runner["MUJOCO_GL"] == "egl"
    assert set(runner["NVIDIA_DRIVER_CAPABILITIES"].split(",")) == {"compute", "utility", "graphics"}
    assert runner["EXPAUDIT_POLICY_DEVICE"] == "cuda"
    assert runner["EXPAUDIT_POLICY_ENVS"] == "16"
    for name in CPU_ROLES:
        assert not {"EXPAUDIT_POLICY_DEVICE", "EXPAUDIT_POLICY_ENVS"} & set(services[name]["environment"])


def test_web_worker_and_runner_share_the_frozen_root_on_a_volume(config):
    for name in APP_ROLES:
        service = config["services"][name]
        root = from_env(service["environment"]).frozen_root
        assert root == "/var/lib/expaudit/frozen", name
        mount = next(v for v in service["volumes"] if v["target"] == root)
        assert (mount["type"], mount["source"]) == ("volume", "frozen-data"), name


def test_long_running_services_have_health_checks(config):
    for name in LONG_RUNNING:
        check = config["services"][name].get("healthcheck")
        assert check and check["test"][0] == "CMD", name


def test_redis_keeps_an_append_only_file_on_a_volume(config):
    redis = config["services"]["redis"]
    command = redis["command"]
    assert command[command.index("--appendonly") + 1] == "yes"
    assert {"type": "volume", "source": "redis-data", "target": "/data"}.items() <= \
        redis["volumes"][0].items()


def test_bucket_setup_runs_once_before_the_app(config):
    services = config["services"]
    setup = services["bucket-setup"]
    assert setup["depends_on"]["minio"]["condition"] == "service_healthy"
    assert "mc mb --ignore-existing" in setup["command"][0]
    assert "leaderboard" in setup["command"][0]
    for name in APP_ROLES:
        assert services[name]["depends_on"]["bucket-setup"]["condition"] == \
            "service_completed_successfully"
        assert services[name]["depends_on"]["redis"]["condition"] == "service_healthy"


def test_app_environment_is_what_the_service_reads(config):
    env = config["services"]["web"]["environment"]
    service_config = from_env(env)
    assert service_config.is_s3 and service_config.store == "s3://expaudit"
    assert service_config.s3_endpoint == "http://minio:9000"
    assert service_config.redis_url == "redis://:expaudit-change-me@redis:6379/0"  # requirepass
    read_back = to_env(service_config)
    unused = {key for key, value in env.items() if value and key not in read_back}
    assert unused == set()


def documented_cpu_override() -> str:
    """The compose override of docs/self_hosting.md ("Running without a GPU"), as written there."""
    text = (ROOT / "docs" / "self_hosting.md").read_text()
    section = text.split("### Running without a GPU", 1)[1]
    blocks = re.findall(r"```yaml\n(.*?)```", section, re.S)
    (override,) = [block for block in blocks if "deploy: !reset" in block]
    return override


def test_documented_cpu_override_runs_the_runner_from_the_cpu_image(tmp_path, config):
    """A CPU-only host: no GPU reservation, the CPU stage with the policies extra, one environment."""
    shutil.copy(ROOT / "compose.yaml", tmp_path / "compose.yaml")
    (tmp_path / "compose.override.yaml").write_text(documented_cpu_override())
    # no -f: Compose then reads compose.yaml and merges compose.override.yaml, as `up` does
    result = subprocess.run([COMPOSE, "config", "--format", "json"], capture_output=True, text=True,
                            cwd=tmp_path, timeout=60,
                            env={"PATH": os.environ["PATH"], "HOME": str(tmp_path)})
    assert result.returncode == 0, result.stderr
    services = json.loads(result.stdout)["services"]
    runner = services["runner"]
    assert "deploy" not in runner and runner["command"] == ["runner"]
    assert runner["build"]["target"] == "app"
    assert "policies" in runner["build"]["args"]["EXTRAS"].split(",")
    # its own tag: the web image is built from the same stage with other extras
    assert runner["image"] not in (services["web"]["image"], config["services"]["runner"]["image"])
    env = runner["environment"]
    assert (env["EXPAUDIT_POLICY_DEVICE"], env["EXPAUDIT_POLICY_ENVS"]) == ("cpu", "1")
    assert env["MUJOCO_GL"] == "egl"
    assert from_env(env).sandbox == "docker"
    web = services["web"]  # the override leaves web (and worker) as they were
    assert (web["image"], web["build"]["target"], web["build"]["args"]) == \
        (config["services"]["web"]["image"], "app", config["services"]["web"]["build"]["args"])


def test_named_volumes_are_declared(config):
    assert {"redis-data", "minio-data", "frozen-data"} <= set(config["volumes"])


# --------------------------------------------------------------- Dockerfile --

def hadolint(path: Path) -> subprocess.CompletedProcess:
    return subprocess.run([HADOLINT, "--no-color", str(path)], capture_output=True, text=True,
                          timeout=60)


def test_dockerfile_passes_hadolint():
    result = hadolint(ROOT / "Dockerfile")
    assert result.returncode == 0, result.stdout + result.stderr


def test_hadolint_flags_a_bad_dockerfile(tmp_path):
    bad = tmp_path / "Dockerfile"
    bad.write_text("FROM python:latest\nRUN apt-get install curl\nUSER root\n")
    result = hadolint(bad)
    assert result.returncode != 0
    assert "DL3007" in result.stdout  # the latest tag
    assert "DL3002" in result.stdout  # last user is root


def dockerfile_stages() -> dict[str, tuple[str, str]]:
    """Stage name -> (FROM image or stage, the stage's text), in the Dockerfile's order."""
    text = (ROOT / "Dockerfile").read_text()
    parts = re.split(r"^FROM (\S+) AS (\S+)$", text, flags=re.M)
    assert not re.search(r"^FROM ", parts[0], re.M), "a FROM without a stage name"
    return {name: (source, body) for source, name, body in zip(parts[1::3], parts[2::3], parts[3::3])}


def test_dockerfile_contract():
    stages = dockerfile_stages()
    assert list(stages)[-1] == "app", "the CPU image must stay the default (last) stage"
    base_from, base = stages["base"]
    assert base_from == "python:3.11-slim"
    assert re.search(r"^HEALTHCHECK .*\n\s+CMD \[\"python\", \"/usr/local/lib/expaudit/healthcheck.py\"\]",
                     base, re.M)
    assert 'ENTRYPOINT ["/usr/local/lib/expaudit/entrypoint.sh"]' in base
    assert "MUJOCO_GL=egl" in base and "libegl1" in base
    packages = {p.parent.name for p in ROOT.glob("*/__init__.py")} - {"tests"}
    for name in ("app", "runner-gpu"):
        source, body = stages[name]
        assert source == "base", name
        user = re.findall(r"^USER (\S+)$", body, re.M)
        assert user and user[-1].split(":")[0] not in ("0", "root"), name
        assert packages <= set(re.findall(r"^COPY (\w+) \./\1$", body, re.M)), name
        assert "COPY docker/entrypoint.sh docker/healthcheck.py /usr/local/lib/expaudit/" in body, name
    _, app = stages["app"]
    assert re.search(r"^ARG EXTRAS=sim$", app, re.M)
    assert 'pip install --no-cache-dir --find-links /tmp/wheels ".[${EXTRAS}]"' in app


def test_only_the_wheels_stage_has_a_compiler():
    """Source-only dependencies (evdev) are built in `wheels`; the images install its wheels."""
    stages = dockerfile_stages()
    source, wheels = stages["wheels"]
    assert source == "base"
    assert "apt-get install -y --no-install-recommends gcc libc6-dev" in wheels
    assert "docker/build_wheels.py" in wheels
    for name in ("app", "runner-gpu"):
        _, body = stages[name]
        assert "COPY --from=wheels /wheels /tmp/wheels" in body, name
        assert "--find-links /tmp/wheels" in body and "rm -rf /tmp/wheels" in body, name
        assert not re.search(r"\b(gcc|g\+\+|build-essential|libc6-dev)\b", body), name
    _, base = stages["base"]
    assert not re.search(r"\b(gcc|build-essential)\b", base)


def test_build_wheels_picks_the_source_only_distributions():
    sys.path.insert(0, str(ROOT / "docker"))
    try:
        import build_wheels
    finally:
        sys.path.remove(str(ROOT / "docker"))
    reqs = build_wheels.requirements(ROOT / "pyproject.toml", "sim")
    assert "robosuite==1.5.2" in reqs and any(r.startswith("numpy") for r in reqs)
    assert not any(r.startswith("torch") for r in reqs)
    with pytest.raises(SystemExit, match="unknown extra.*nope"):
        build_wheels.requirements(ROOT / "pyproject.toml", "sim,nope")
    report = {"install": [
        {"download_info": {"url": "https://files/evdev-2.0.0.tar.gz"},
         "metadata": {"name": "evdev", "version": "2.0.0"}},
        {"download_info": {"url": "https://files/numpy-1.26.4-cp311-manylinux.whl#sha256=ab"},
         "metadata": {"name": "numpy", "version": "1.26.4"}},
        {"download_info": {"url": "https://files/zipped-1.0.zip#sha256=cd"},
         "metadata": {"name": "zipped", "version": "1.0"}}]}
    assert build_wheels.source_only(report) == ["evdev==2.0.0", "zipped==1.0"]


def test_gpu_runner_stage():
    """CUDA torch with its torchvision, the sim and policies extras, MuJoCo on the GPU's EGL."""
    _, gpu = dockerfile_stages()["runner-gpu"]
    assert re.search(r"NVIDIA_DRIVER_CAPABILITIES=compute,utility,graphics\b", gpu)
    assert re.search(r"EXPAUDIT_POLICY_DEVICE=cuda\b", gpu)
    assert '"torch==2.13.0" "torchvision==0.28.0"' in gpu
    assert "torch.version.cuda" in gpu  # the build fails on a CPU-only torch
    assert 'pip install --no-cache-dir --find-links /tmp/wheels ".[sim,policies]"' in gpu
    assert 'pip install --no-cache-dir --no-deps "robomimic==0.3.0"' in gpu
    assert gpu.index('"torchvision==0.28.0"') < gpu.index('".[sim,policies]"')
    assert re.search(r'^CMD \["runner"\]$', gpu, re.M)


def test_policies_extra_leaves_robomimic_to_the_installers():
    """pip resolving robomimic's requirements pulls torchvision (and with it a CUDA torch):
    the extra lists what robomimic imports, and the installers add robomimic with --no-deps."""
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    names = {re.split(r"[<>=!~\[; ]", req, maxsplit=1)[0].lower() for req in extras["policies"]}
    assert not {"robomimic", "torchvision"} & names
    assert {"torch", "h5py", "psutil", "tqdm", "termcolor", "six", "matplotlib"} <= names
    assert "torch==2.13.0" in extras["policies"] and "torch==2.13.0" in extras["embed"]
    bootstrap = (ROOT / "scripts" / "bootstrap.sh").read_text()
    assert '--no-deps "robomimic==0.3.0"' in bootstrap
    _, app = dockerfile_stages()["app"]
    assert 'pip install --no-cache-dir --no-deps "robomimic==0.3.0"' in app
    assert "scripts/bootstrap.sh dev,sim,embed,policies" in (ROOT / "Makefile").read_text()


@pytest.mark.slow
def test_the_installed_package_carries_its_data_files(tmp_path):
    """The image installs the project with `pip install .`: the frozen benchmark
    data and the leaderboard templates must be inside that install, not only in
    the source tree."""
    source = tmp_path / "src"
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, source / name)
    for package in ("expaudit", "expaudit_client", "leaderboard", "benchmark_data", "service",
                    "simulator", "sandbox"):
        shutil.copytree(ROOT / package, source / package,
                        ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
                            "-q", "-w", str(tmp_path / "wheel"), str(source)],
                           capture_output=True, text=True, timeout=300)
    assert built.returncode == 0, built.stderr
    import zipfile

    (wheel,) = (tmp_path / "wheel").glob("*.whl")
    shipped = set(zipfile.ZipFile(wheel).namelist())
    wanted = {p.relative_to(source).as_posix()
              for folder in ("benchmark_data/frozen", "leaderboard/site/templates")
              for p in (source / folder).rglob("*") if p.is_file()}
    assert wanted, "no data files found"
    assert sorted(wanted - shipped) == []


def test_dockerignore_keeps_the_build_context_small():
    ignored = set((ROOT / ".dockerignore").read_text().split())
    assert {".git", ".venv", "tests", "var"} <= ignored


# ------------------------------------------------------- entrypoint / health --

def run_entrypoint(*args: str, env: dict[str, str], timeout: float = 30) -> subprocess.CompletedProcess:
    return subprocess.run([str(ENTRYPOINT), *args], capture_output=True, text=True, env=env,
                          timeout=timeout)


def base_env(tmp_path: Path) -> dict[str, str]:
    return {"PATH": f"{VENV_BIN}:{os.environ['PATH']}", "HOME": str(tmp_path),
            "EXPAUDIT_STATE_DIR": str(tmp_path)}


def healthcheck(env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(HEALTHCHECK)], capture_output=True, text=True,
                          env=env, timeout=30)


def test_entrypoint_runs_other_commands_as_given(tmp_path):
    result = run_entrypoint("sh", "-c", "echo role-passthrough", env=base_env(tmp_path))
    assert result.returncode == 0 and result.stdout == "role-passthrough\n"
    assert (tmp_path / "expaudit-role").read_text() == "sh\n"


def test_entrypoint_seeds_the_frozen_root_once(tmp_path):
    from benchmark_data.paths import FROZEN_ROOT

    target = tmp_path / "frozen"
    env = {**base_env(tmp_path), "EXPAUDIT_FROZEN_ROOT": str(target)}
    first = run_entrypoint("seed", env=env, timeout=120)
    assert first.returncode == 0, first.stderr
    assert f"frozen data copied to {target}" in first.stderr
    shipped = sorted(p.relative_to(FROZEN_ROOT) for p in FROZEN_ROOT.rglob("*") if p.is_file())
    assert shipped and all((target / rel).is_file() for rel in shipped)
    computed = target / "cells" / "replay__stack-hidden.journal.jsonl"
    computed.write_text('{"cell": "computed by a runner"}\n')
    (target / "README.md").write_text("changed here\n")
    again = run_entrypoint("seed", env=env, timeout=120)
    assert again.returncode == 0 and "copied" not in again.stderr
    assert computed.is_file() and (target / "README.md").read_text() == "changed here\n"


def test_runner_role_runs_expaudit_runner_on_the_frozen_root(tmp_path):
    redis = RedisServer(tmp_path / "redis").start()
    root = tmp_path / "frozen"
    env = {**base_env(tmp_path), "EXPAUDIT_REDIS_URL": redis.url, "EXPAUDIT_FROZEN_ROOT": str(root)}
    runner = ProcessServer([str(ENTRYPOINT), "runner"], tmp_path / "runner.log", env=env).start()
    try:
        import redis as redis_client
        from rq import Queue, Worker

        connection = redis_client.Redis.from_url(redis.url)
        deadline = time.monotonic() + 60
        while not Worker.all(queue=Queue("rollouts", connection=connection)):
            assert runner.alive, runner.log_tail()
            assert time.monotonic() < deadline, runner.log_tail()
            time.sleep(0.2)
        assert f"frozen data read from {root}, computed cells go to " in runner.log_tail()
        assert (root / ".seeded").is_file()
    finally:
        runner.stop()
        redis.stop()


@pytest.mark.parametrize("role", ["worker", "runner"])
def test_queue_roles_need_a_redis_url(tmp_path, role):
    result = run_entrypoint(role, env=base_env(tmp_path))
    assert result.returncode != 0
    assert f"EXPAUDIT_REDIS_URL must be set for the {role} role" in result.stderr


def test_worker_role_is_healthy_while_redis_answers(tmp_path):
    redis = RedisServer(tmp_path / "redis").start()
    env = {**base_env(tmp_path), "EXPAUDIT_REDIS_URL": redis.url, "EXPAUDIT_STORE": str(tmp_path / "store")}
    worker = ProcessServer([str(ENTRYPOINT), "worker"], tmp_path / "worker.log", env=env).start()
    try:
        import redis as redis_client
        from rq import Worker

        connection = redis_client.Redis.from_url(redis.url)
        deadline = time.monotonic() + 30
        while not Worker.all(connection=connection):
            assert worker.alive, worker.log_tail()
            assert time.monotonic() < deadline, worker.log_tail()
            time.sleep(0.2)
        queues = {q.name for w in Worker.all(connection=connection) for q in w.queues}
        assert {"audit", "publish"} <= queues
        ok = healthcheck(env)
        assert ok.returncode == 0 and ok.stdout == "worker: redis answers\n"
        redis.stop()
        down = healthcheck(env)
        assert down.returncode == 1 and "redis unreachable" in down.stdout
    finally:
        worker.stop()
        redis.stop()


def test_web_role_serves_the_app_and_reports_healthy(tmp_path):
    redis = RedisServer(tmp_path / "redis").start()
    port = free_port()
    env = {**base_env(tmp_path), "EXPAUDIT_REDIS_URL": redis.url, "EXPAUDIT_PORT": str(port),
           "EXPAUDIT_STORE": str(tmp_path / "store"), "EXPAUDIT_WEB_WORKERS": "1"}
    web = ProcessServer([str(ENTRYPOINT), "web"], tmp_path / "web.log", env=env).start()
    try:
        wait_for_port(port, 60, web.proc, web.log)
        assert requests.get(f"http://127.0.0.1:{port}/healthz", timeout=10).json()["redis"] == "ok"
        ok = healthcheck(env)
        assert ok.returncode == 0, ok.stdout
        assert ok.stdout == f"web: http://127.0.0.1:{port}/healthz answered 200\n"
        redis.stop()  # the app answers 503 (degraded) and the container turns unhealthy
        down = healthcheck(env)
        assert down.returncode == 1
        assert down.stdout == f"web: http://127.0.0.1:{port}/healthz answered 503\n"
    finally:
        web.stop()
        redis.stop()


def test_health_of_a_web_role_without_a_server_fails(tmp_path):
    (tmp_path / "expaudit-role").write_text("web\n")
    env = {**base_env(tmp_path), "EXPAUDIT_PORT": str(free_port())}
    result = healthcheck(env)
    assert result.returncode == 1 and "unreachable" in result.stdout


# ---------------------------------------------------------------- nginx ----

NGINX = shutil.which("nginx") or "/usr/sbin/nginx"


def render_nginx(tmp_path: Path, port: int, web_port: int, store_port: int) -> Path:
    """The compose front door's config, made runnable here: hosts and ports replaced."""
    server = NGINX_TEMPLATE.read_text()
    server = server.replace("${EXPAUDIT_BUCKET}", "expaudit")
    server = server.replace("listen 80;", f"listen 127.0.0.1:{port};")
    server = server.replace("http://web:8000", f"http://127.0.0.1:{web_port}")
    server = server.replace("http://minio:9000", f"http://127.0.0.1:{store_port}")
    server = server.replace("Host minio:9000", f"Host 127.0.0.1:{store_port}")
    server = server.replace("/var/cache/nginx/leaderboard", str(tmp_path / "cache"))
    conf = tmp_path / "nginx.conf"
    # as root, nginx workers would drop to `nobody`, who cannot enter pytest's tmp dirs
    user = "user root;\n" if os.geteuid() == 0 else ""
    conf.write_text(
        f"{user}worker_processes 1;\npid {tmp_path}/nginx.pid;\nerror_log {tmp_path}/error.log;\n"
        f"events {{ worker_connections 64; }}\n"
        f"http {{\n access_log off;\n client_body_temp_path {tmp_path}/body;\n"
        f" proxy_temp_path {tmp_path}/proxy;\n fastcgi_temp_path {tmp_path}/fcgi;\n"
        f" uwsgi_temp_path {tmp_path}/uwsgi;\n scgi_temp_path {tmp_path}/scgi;\n{server}\n}}\n")
    return conf


def test_nginx_front_door_routes_leaderboard_and_api(tmp_path):
    bucket = tmp_path / "bucket"
    site = bucket / "expaudit" / "leaderboard"
    (site / "settings").mkdir(parents=True)
    (site / "index.html").write_text("<h1>index page</h1>")
    (site / "settings" / "a.json").write_text('{"rows": []}')
    api = tmp_path / "api"
    (api / "api" / "v1").mkdir(parents=True)
    (api / "api" / "v1" / "ping").write_text("pong")
    (api / "healthz").write_text("ok")
    store_port, web_port, port = free_port(), free_port(), free_port()
    servers = [
        ProcessServer([sys.executable, "-m", "http.server", str(store_port), "--bind", "127.0.0.1",
                       "--directory", str(bucket)], tmp_path / "store.log"),
        ProcessServer([sys.executable, "-m", "http.server", str(web_port), "--bind", "127.0.0.1",
                       "--directory", str(api)], tmp_path / "web.log"),
    ]
    conf = render_nginx(tmp_path, port, web_port, store_port)
    checked = subprocess.run([NGINX, "-t", "-c", str(conf), "-p", str(tmp_path)],
                             capture_output=True, text=True, timeout=30)
    assert checked.returncode == 0, checked.stderr
    nginx = ProcessServer([NGINX, "-c", str(conf), "-p", str(tmp_path), "-g", "daemon off;"],
                          tmp_path / "nginx.log")
    try:
        for server in [*servers, nginx]:
            server.start()
        for p in (store_port, web_port, port):
            wait_for_port(p, 10)
        base = f"http://127.0.0.1:{port}"
        assert requests.get(f"{base}/", timeout=5).text == "<h1>index page</h1>"
        first = requests.get(f"{base}/settings/a.json", timeout=5)
        assert first.json() == {"rows": []} and first.headers["X-Cache-Status"] == "MISS"
        (site / "settings" / "a.json").write_text('{"rows": [1]}')
        cached = requests.get(f"{base}/settings/a.json", timeout=5)
        assert cached.json() == {"rows": []} and cached.headers["X-Cache-Status"] == "HIT"
        assert requests.get(f"{base}/api/v1/ping", timeout=5).text == "pong"
        assert requests.get(f"{base}/healthz", timeout=5).text == "ok"
        assert requests.get(f"{base}/nginx-health", timeout=5).text == "ok\n"
        missing = requests.get(f"{base}/settings/none.html", timeout=5)
        assert missing.status_code == 404 and missing.text == "not found\n"
        # writes never reach the bucket (denied, answered like a missing page)
        assert requests.post(f"{base}/index.html", timeout=5).status_code == 404
        assert requests.get(f"{base}/metrics", timeout=5).status_code == 404
    finally:
        nginx.stop()
        for server in servers:
            server.stop()


# ------------------------------------------------------------ documentation --

def _config_variables() -> set[str]:
    """The variables the service's configuration and the API client read."""
    source = "".join((ROOT / path).read_text() for path in ("service/process/config.py",
                                                            "expaudit_client/http.py"))
    return set(re.findall(r'"((?:EXPAUDIT|AWS)_[A-Z_]+)"', source))


def _table_variables(doc: Path, heading: str) -> set[str]:
    text = doc.read_text()
    section = text[text.index(heading):]
    section = section[:section.find("\n## ", 1) if "\n## " in section[1:] else len(section)]
    rows = [line for line in section.splitlines() if line.startswith("| `")]
    return {name for row in rows for name in re.findall(r"`((?:EXPAUDIT|AWS)_[A-Z_]+)`", row)}


def test_every_config_variable_is_documented_and_every_documented_one_exists():
    read = _config_variables()
    assert {"EXPAUDIT_FROZEN_ROOT", "EXPAUDIT_SANDBOX", "EXPAUDIT_SELECTOR_WALL_SECONDS",
            "EXPAUDIT_SEALED_SUBMISSIONS_PER_DAY", "EXPAUDIT_STORE"} <= read
    assert _table_variables(ROOT / "docs" / "service.md", "## Configuration") == read
    server_side = read - {"EXPAUDIT_SERVER", "EXPAUDIT_TOKEN"}
    hosting = _table_variables(ROOT / "docs" / "self_hosting.md", "Variables the service reads")
    assert hosting == server_side


def test_documented_defaults_match_the_code():
    from service.process import defaults

    text = (ROOT / "docs" / "service.md").read_text()
    row = next(line for line in text.splitlines() if line.startswith("| `EXPAUDIT_SELECTOR_WALL"))
    assert f"1 to {defaults.SELECTOR_WALL_SECONDS_MAX}" in row
    assert row.endswith(f"| {defaults.SELECTOR_WALL_SECONDS} |")
    row = next(line for line in text.splitlines() if line.startswith("| `EXPAUDIT_SEALED"))
    assert row.endswith(f"| {defaults.SEALED_SUBMISSIONS_PER_DAY} |")
    row = next(line for line in text.splitlines() if line.startswith("| `EXPAUDIT_SANDBOX"))
    assert row.endswith(f"| `{defaults.SANDBOX_BACKEND}` |")
    assert all(f"`{name}`" in row for name in defaults.SANDBOX_BACKENDS)
