"""Settings (list, detail with completeness) and their downloads.

Two kinds are listed: the retrieval settings of the catalog (`kind` "retrieval") and the
readout settings, one per task and bank version (`kind` "readout", `service.catalog.readout`).
"""

from __future__ import annotations

from flask import Blueprint, Response, jsonify, redirect, request

from expaudit.errors import DataNotFound
from benchmark_data.downloads import (DOWNLOAD_FORMAT_VERSION, DOWNLOADS, describe,
                                     library_archive)
from benchmark_data.versions import (DATA_VERSION, UnknownDataVersion, check_version,
                                     load_transfer_at, query_images_at)
from service.catalog import DataUnavailable, UnknownSetting, downloads, fingerprint, open_readout_catalog
from service.web.context import services
from service.errors import Forbidden, NotFound, ValidationFailed

api = Blueprint("settings", __name__)


def _detail(setting_id: str) -> dict:
    svc = services()
    setting = svc.catalog.get_setting(setting_id)
    return {**setting.public_dict(), "kind": "retrieval", "completeness": svc.catalog.completeness(setting_id).to_dict(),
            "downloads": _download_links(setting_id)}


def _download_links(setting_id: str) -> dict:
    """Every download the setting has here (`benchmark_data.downloads.DOWNLOADS`), by key:
    its URL (with its default format; `?format=` picks another)."""
    base = f"{request.script_root}/api/v1"
    return {d.key: f"{base}/{d.path(setting_id)}"
            for d in downloads.offered_downloads(services().catalog, setting_id)}


def _readout_detail(setting) -> dict:
    """A readout setting: its bank's public facts, and whether it takes submissions here."""
    try:
        open_readout_catalog(services().config, services().catalog).check_sealed(setting.id)
        available, reason = True, None
    except DataUnavailable as exc:
        available, reason = False, str(exc)
    base = f"{request.script_root}/api/v1/settings/{setting.id}"
    offered = open_readout_catalog(services().config, services().catalog).downloads(setting.id)
    return {**setting.public_dict(), "accepts_submissions": available, "unavailable_reason": reason,
            "downloads": {d.key: f"{base}/{d.route}" for d in offered}}


@api.get("/settings")
def list_settings():
    svc = services()
    readout = [_readout_detail(s) for s in open_readout_catalog(svc.config, svc.catalog).list_settings()]
    return jsonify({"settings": [_detail(s.id) for s in svc.catalog.list_settings()] + readout})


@api.get("/settings/<setting_id>")
def get_setting(setting_id: str):
    try:
        return jsonify(_detail(setting_id))
    except UnknownSetting:
        readout = open_readout_catalog(services().config, services().catalog)
        if not readout.is_readout(setting_id):
            raise
        return jsonify(_readout_detail(readout.get_setting(setting_id)))


def _format(allowed: tuple[str, ...], default: str) -> str:
    fmt = request.args.get("format", default)
    if fmt not in allowed:
        raise ValidationFailed(f"format must be one of {list(allowed)}, got '{fmt}'", field="format")
    return fmt


def _data_version() -> str | None:
    """`?data_version=`: an earlier data version the frozen root keeps; None for the current one."""
    try:
        version = check_version(request.args.get("data_version"), getattr(services().catalog, "root", None))
    except UnknownDataVersion as exc:
        raise ValidationFailed(str(exc), field="data_version") from None
    return None if version == DATA_VERSION else version


def _serve(setting_id: str, what: str, fmt: str) -> Response:
    svc = services()
    data_version = _data_version()
    data = (svc.catalog.load_transfer(setting_id) if data_version is None else
            load_transfer_at(setting_id, data_version, getattr(svc.catalog, "root", None)))
    version = fingerprint(data)
    key = (f"downloads/{setting_id}/{version[:24]}/v{DOWNLOAD_FORMAT_VERSION}"
           f"{'' if data_version is None else '/' + data_version}/{what}.{fmt}")
    if not svc.store.exists(key):
        metadata = describe(svc.catalog.get_setting(setting_id), what, version, data_version)
        svc.store.put_if_absent(key, downloads.build(data, what, fmt, metadata),
                                downloads.MEDIA_TYPES[fmt])
    url = svc.store.url_for(key)
    if url is not None:
        return redirect(url, code=302)
    body = svc.store.get_bytes(key)
    response = Response(body, mimetype=downloads.MEDIA_TYPES[fmt].split(";")[0])
    name = DOWNLOADS[what].file_name(setting_id, fmt)
    response.headers["Content-Disposition"] = f'attachment; filename="{name}"'
    return response


@api.get("/settings/<setting_id>/outcomes")
def download_outcomes(setting_id: str):
    setting = services().catalog.get_setting(setting_id)
    fmt = _format(downloads.OUTCOME_FORMATS, "parquet")
    if setting.sealed:
        raise Forbidden(f"setting '{setting_id}' is sealed: its outcomes are never published",
                        field="setting_id", code="sealed")
    return _serve(setting_id, "outcomes", fmt)


@api.get("/settings/<setting_id>/scenes")
def download_scenes(setting_id: str):
    services().catalog.get_setting(setting_id)
    return _serve(setting_id, "scenes", _format(downloads.TABLE_FORMATS, "csv"))


@api.get("/settings/<setting_id>/experiences")
def download_experiences(setting_id: str):
    services().catalog.get_setting(setting_id)
    return _serve(setting_id, "experiences", _format(downloads.TABLE_FORMATS, "csv"))


@api.get("/settings/<setting_id>/archives/<kind>")
def download_archive(setting_id: str, kind: str):
    svc = services()
    if kind not in ("images", "library"):
        raise NotFound(f"archive kind must be 'images' or 'library', got '{kind}'", field="kind")
    data_version = _data_version() if kind == "images" else None
    path = (svc.catalog.archive_path(setting_id, kind) if data_version is None else
            query_images_at(setting_id, data_version, getattr(svc.catalog, "root", None)))
    if path is None:
        raise NotFound(f"the frozen data of '{setting_id}' has no {kind} archive", field="kind")
    download = DOWNLOADS["query_images" if kind == "images" else "library"]
    name = download.file_name(setting_id)
    stat = path.stat()
    key = (f"archives/{setting_id}/{kind}/{stat.st_size}-{int(stat.st_mtime)}"
           f"/v{DOWNLOAD_FORMAT_VERSION}{'' if data_version is None else '/' + data_version}/{name}")
    if not svc.store.exists(key):
        svc.store.put_if_absent(key, _archive_bytes(setting_id, download.key, path),
                                "application/octet-stream")
    url = svc.store.url_for(key)
    if url is not None:
        return redirect(url, code=302)
    response = Response(svc.store.get_bytes(key), mimetype="application/octet-stream")
    response.headers["Content-Disposition"] = f'attachment; filename="{name}"'
    return response


def _archive_bytes(setting_id: str, key: str, path) -> bytes:
    """A query set's image archive as it is; a library cut to the setting's K experiences."""
    if key != "library":
        return path.read_bytes()
    setting = services().catalog.get_setting(setting_id)
    try:
        return library_archive(setting, path, describe(setting, key))
    except DataNotFound as exc:
        raise DataUnavailable(setting_id, str(exc)) from None


@api.get("/settings/<setting_id>/files/<name>")
def download_readout_file(setting_id: str, name: str):
    """A readout bank's public file (`ReadoutCatalog.downloads`), as it is."""
    svc = services()
    readout = open_readout_catalog(svc.config, svc.catalog)
    if not readout.is_readout(setting_id):
        svc.catalog.get_setting(setting_id)  # an unknown id is named as such
        raise NotFound(f"setting '{setting_id}' is not a readout setting: it has no bank files",
                       field="setting_id")
    found = readout.download(setting_id, name)
    if found is None:
        raise NotFound(f"the bank of '{setting_id}' offers no file '{name}'", field="name")
    download, path = found
    stat = path.stat()
    key = f"readout-files/{setting_id}/{stat.st_size}-{stat.st_mtime_ns}/{download.file}"
    if not svc.store.exists(key):
        svc.store.put_if_absent(key, path.read_bytes(), "application/octet-stream")
    url = svc.store.url_for(key)
    if url is not None:
        return redirect(url, code=302)
    response = Response(svc.store.get_bytes(key), mimetype="application/octet-stream")
    response.headers["Content-Disposition"] = f'attachment; filename="{download.file_name(setting_id)}"'
    return response
