"""The submitters' client as a wheel served by the server itself: `pip install URL`.

A researcher who has only a deployed instance's address installs the client with
`pip install https://SERVER/client/expaudit_client-VERSION-py3-none-any.whl`; no checkout,
no package index. The wheel (PEP 427) is built in memory from the `expaudit_client`
package and the metadata of `client/pyproject.toml` (its name, version, Python range,
command and links) the first time it is asked for, and kept for the process. The package
is standard library only and pure Python, so one `py3-none-any` wheel serves every
Python the metadata admits. An installation without `client/` (a wheel install of the
service) answers 404 `not_available`.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import io
import tomllib
import zipfile
from dataclasses import dataclass
from pathlib import Path

import expaudit_client
from flask import Blueprint, Response, jsonify, request

from expaudit.errors import DataNotFound

site = Blueprint("client_wheel", __name__)

PACKAGE = "expaudit_client"
FIXED_TIME = (2026, 1, 1, 0, 0, 0)
"""Every member's zip timestamp: the same sources give the same bytes and the same sha256."""


class ClientUnavailable(DataNotFound, LookupError):
    """This installation has no client sources to build the wheel from."""


@dataclass(frozen=True)
class Wheel:
    filename: str
    data: bytes

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.data).hexdigest()


def _digest(data: bytes) -> str:
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def _metadata(project: dict) -> str:
    lines = ["Metadata-Version: 2.1", f"Name: {project['name']}", f"Version: {project['version']}",
             f"Summary: {project.get('description', '')}"]
    if project.get("requires-python"):
        lines.append(f"Requires-Python: {project['requires-python']}")
    if project.get("license"):
        lines.append(f"License: {project['license']}")
    lines += [f"Classifier: {c}" for c in project.get("classifiers", [])]
    lines += [f"Project-URL: {label}, {url}" for label, url in project.get("urls", {}).items()]
    lines += [f"Requires-Dist: {dep}" for dep in project.get("dependencies", [])]
    return "\n".join(lines) + "\n"


def build_wheel(pyproject: Path, package_dir: Path) -> Wheel:
    """The client wheel from `pyproject` (its [project] table) and the `.py` files of
    `package_dir`, byte for byte the same for the same inputs."""
    project = tomllib.loads(pyproject.read_text())["project"]
    dist = project["name"].replace("-", "_")
    info = f"{dist}-{project['version']}.dist-info"
    members: list[tuple[str, bytes]] = [
        (f"{PACKAGE}/{path.name}", path.read_bytes()) for path in sorted(package_dir.glob("*.py"))]
    if not members:
        raise ClientUnavailable(f"no client sources in {package_dir.name}/")
    scripts = project.get("scripts", {})
    members.append((f"{info}/METADATA", _metadata(project).encode()))
    members.append((f"{info}/WHEEL", b"Wheel-Version: 1.0\nGenerator: expaudit\nRoot-Is-Purelib: true\n"
                                     b"Tag: py3-none-any\n"))
    if scripts:
        members.append((f"{info}/entry_points.txt", ("[console_scripts]\n" + "".join(
            f"{name} = {target}\n" for name, target in scripts.items())).encode()))
    record = "".join(f"{name},{_digest(data)},{len(data)}\n" for name, data in members)
    members.append((f"{info}/RECORD", (record + f"{info}/RECORD,,\n").encode()))
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in members:
            entry = zipfile.ZipInfo(name, FIXED_TIME)
            entry.compress_type = zipfile.ZIP_DEFLATED
            entry.external_attr = 0o644 << 16
            archive.writestr(entry, data)
    return Wheel(f"{dist}-{project['version']}-py3-none-any.whl", buffer.getvalue())


def _sources() -> tuple[Path, Path]:
    package_dir = Path(expaudit_client.__file__).resolve().parent
    pyproject = package_dir.parent / "client" / "pyproject.toml"
    if not pyproject.is_file():
        raise ClientUnavailable("this installation has no client/pyproject.toml to build the client "
                                "wheel from; install the client from a checkout (pip install ./client)")
    return pyproject, package_dir


@functools.cache
def served_wheel() -> Wheel:
    """This installation's client wheel, built once per process."""
    return build_wheel(*_sources())


@site.get("/client/")
def client_index():
    """Where the wheel is and how to install it."""
    wheel = served_wheel()
    url = request.host_url.rstrip("/") + f"/client/{wheel.filename}"
    return jsonify({"filename": wheel.filename, "sha256": wheel.sha256, "url": url,
                    "install": f"pip install {url}"})


@site.get("/client/<filename>")
def client_file(filename: str):
    wheel = served_wheel()
    if filename != wheel.filename:
        raise ClientUnavailable(f"no client file '{filename}' here; this server serves {wheel.filename}")
    return Response(wheel.data, mimetype="application/zip",
                    headers={"Content-Disposition": f"attachment; filename={wheel.filename}",
                             "X-Checksum-Sha256": wheel.sha256})
