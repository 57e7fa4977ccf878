"""What a remote selector author needs over HTTP: the exact /input tree, base images, trajectories.

- `GET /settings/<id>/selector-input`: the /input tree a container
  submission on that setting is given (`Catalog.selector_input`, the same
  function the selector job calls), as a .tar.gz. `expaudit selector input`
  unpacks it, so a selector tried locally runs unchanged on the service.
- `GET /settings/<id>/base-images`: the base-scene PNG of every experience of
  the setting (`<experience_id>.png`), as a .tar.
- `GET /settings/<id>/trajectories`: every experience's recorded target path
  (columns `x, y, z, yaw, grip, phase`), as JSON.

On a readout setting the first is the tree a readout program is given
(`service.catalog.readout_input`: images of train, dev and confirm, the public
labels of train and dev); the other two are the retrieval track's alone.

All three come from the frozen scenes and library only: no outcome is read,
so they are served for sealed settings too. Each is built once and kept in
the object store under `selector-inputs/<id>/<version>/`, the version being
the content hash of the tree; a web process builds the tree once to learn it
(the scenes and library are frozen: runners add outcome cells, never scenes).
With an S3 store the answer is a redirect to a presigned URL.
"""

from __future__ import annotations

import hashlib
import io
import json
import tarfile
import tempfile
from pathlib import Path

import numpy as np
from flask import Blueprint, Response, current_app, redirect

from benchmark_data.image_archive import member_name
from service.catalog import open_readout_catalog, prepare_readout_setting_input
from service.web.context import services
from service.errors import NotFound

api = Blueprint("selector_inputs", __name__)

PREFIX = "selector-inputs"
"""Object-store prefix of the built archives."""

MEDIA = {"tar.gz": "application/gzip", "tar": "application/x-tar", "json": "application/json"}


def _readout(setting_id: str) -> bool:
    svc = services()
    return open_readout_catalog(svc.config, svc.catalog).is_readout(setting_id)


def _supported(setting_id: str, name: str) -> None:
    if _readout(setting_id):
        if name != "input.tar.gz":
            raise NotFound(f"setting '{setting_id}' is a readout setting: it has an /input tree "
                           "(selector-input) and no library", field="setting_id")
        return
    catalog = services().catalog
    if not catalog.supports_selectors(setting_id):
        raise NotFound(f"setting '{setting_id}' takes no selector submissions here: its /input "
                       "tree cannot be built", field="setting_id")


def _tree(setting_id: str, directory: Path) -> Path:
    target = directory / "input"
    svc = services()
    if _readout(setting_id):
        prepare_readout_setting_input(open_readout_catalog(svc.config, svc.catalog), setting_id, target)
    else:
        svc.catalog.selector_input(setting_id, target)
    return target


def _version(tree: Path) -> str:
    """Content hash of a built tree: a new data version gets a new key, an old one its old key."""
    digest = hashlib.sha256()
    for path in sorted(p for p in tree.rglob("*") if p.is_file()):
        digest.update(path.relative_to(tree).as_posix().encode() + b"\0")
        digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()[:24]


def _tar(tree: Path, members: list[tuple[Path, str]], compress: bool) -> bytes:
    """A deterministic tar (sorted names, zero times, owner 0, modes as on disk)."""
    buffer = io.BytesIO()
    mode = "w:gz" if compress else "w"
    with tarfile.open(fileobj=buffer, mode=mode, format=tarfile.PAX_FORMAT) as tar:
        for path, name in members:
            info = tar.gettarinfo(str(path), arcname=name)
            info.mtime, info.uid, info.gid, info.uname, info.gname = 0, 0, 0, "", ""
            if info.isdir():
                tar.addfile(info)
            else:
                with path.open("rb") as handle:
                    tar.addfile(info, handle)
    return buffer.getvalue()


def input_archive(tree: Path) -> bytes:
    """The /input tree as a .tar.gz, every entry under `input/`."""
    members = [(tree, "input")] + [(p, "input/" + p.relative_to(tree).as_posix())
                                   for p in sorted(tree.rglob("*"))]
    return _tar(tree, members, compress=True)


def base_images_archive(tree: Path) -> bytes:
    """The base image of every experience of the tree's library, in library order, named as in
    the frozen library's archive (`<experience_id>.png`)."""
    setting = json.loads((tree / "setting.json").read_text())
    members = []
    for experience_id in setting["experience_ids"]:
        members.append((tree / "library" / experience_id / "base.png", member_name(experience_id)))
    return _tar(tree, members, compress=False)


def trajectories_document(tree: Path) -> bytes:
    """Every experience's recorded path, as the /input tree holds it."""
    setting = json.loads((tree / "setting.json").read_text())
    experiences = {}
    columns = None
    for experience_id in setting["experience_ids"]:
        folder = tree / "library" / experience_id
        meta_file = folder / "meta.json"
        meta = json.loads(meta_file.read_text()) if meta_file.is_file() else {}
        columns = columns or meta.get("path_columns")
        with np.load(folder / "trajectory.npz") as npz:
            experiences[experience_id] = {name: npz[name].tolist() for name in sorted(npz.files)}
    document = {"setting_id": setting["setting_id"], "path_columns": columns,
                "experience_ids": setting["experience_ids"], "trajectories": experiences}
    return json.dumps(document, sort_keys=True, allow_nan=False).encode()


BUILDERS = {"input.tar.gz": input_archive, "base_images.tar": base_images_archive,
            "trajectories.json": trajectories_document}


def _builders(setting_id: str) -> dict:
    """What is built from a setting's tree: a readout tree has no library to take apart."""
    return {"input.tar.gz": input_archive} if _readout(setting_id) else BUILDERS


_VERSIONS = "expaudit.selector_input_versions"
"""`app.extensions` key: setting id -> version of its tree, learnt by this app (one per
process under gunicorn; each test app starts with none)."""


def _versions() -> dict[str, str]:
    return current_app.extensions.setdefault(_VERSIONS, {})


def _key(setting_id: str, version: str, name: str) -> str:
    return f"{PREFIX}/{setting_id}/{version}/{name}"


def _artifact(setting_id: str, name: str) -> Response:
    """Build (once per tree version) and serve one artifact of the setting's /input tree."""
    _supported(setting_id, name)
    svc = services()
    versions = _versions()
    version = versions.get(setting_id)
    if version is None or not svc.store.exists(_key(setting_id, version, name)):
        with tempfile.TemporaryDirectory(prefix="expaudit-input-") as tmp:
            tree = _tree(setting_id, Path(tmp))
            version = versions[setting_id] = _version(tree)
            for artifact, build in _builders(setting_id).items():
                key = _key(setting_id, version, artifact)
                if not svc.store.exists(key):
                    svc.store.put_if_absent(key, build(tree), MEDIA[artifact.split(".", 1)[1]])
    key = _key(setting_id, version, name)
    url = svc.store.url_for(key)
    if url is not None:
        return redirect(url, code=302)
    response = Response(svc.store.get_bytes(key), mimetype=MEDIA[name.split(".", 1)[1]])
    if not name.endswith(".json"):
        response.headers["Content-Disposition"] = f'attachment; filename="{setting_id}-{name}"'
    return response


@api.get("/settings/<setting_id>/selector-input")
def selector_input(setting_id: str):
    return _artifact(setting_id, "input.tar.gz")


@api.get("/settings/<setting_id>/base-images")
def base_images(setting_id: str):
    return _artifact(setting_id, "base_images.tar")


@api.get("/settings/<setting_id>/trajectories")
def trajectories(setting_id: str):
    return _artifact(setting_id, "trajectories.json")
