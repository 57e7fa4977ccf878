"""Settings (list, detail with completeness) and their downloads."""

from __future__ import annotations

from flask import Blueprint, Response, jsonify, redirect, request

from service.catalog import downloads, fingerprint
from service.web.context import services
from service.errors import Forbidden, NotFound, ValidationFailed

api = Blueprint("settings", __name__)


def _detail(setting_id: str) -> dict:
    svc = services()
    setting = svc.catalog.get_setting(setting_id)
    return {**setting.public_dict(), "completeness": svc.catalog.completeness(setting_id).to_dict(),
            "downloads": _download_links(setting_id, setting.sealed)}


def _download_links(setting_id: str, sealed: bool) -> dict:
    base = f"{request.script_root}/api/v1/settings/{setting_id}"
    links = {"scenes": f"{base}/scenes?format=csv", "experiences": f"{base}/experiences?format=csv"}
    if not sealed:
        links["outcomes"] = f"{base}/outcomes?format=parquet"
    return links


@api.get("/settings")
def list_settings():
    svc = services()
    return jsonify({"settings": [_detail(s.id) for s in svc.catalog.list_settings()]})


@api.get("/settings/<setting_id>")
def get_setting(setting_id: str):
    return jsonify(_detail(setting_id))


def _format(allowed: tuple[str, ...], default: str) -> str:
    fmt = request.args.get("format", default)
    if fmt not in allowed:
        raise ValidationFailed(f"format must be one of {list(allowed)}, got '{fmt}'", field="format")
    return fmt


def _serve(setting_id: str, what: str, fmt: str) -> Response:
    svc = services()
    data = svc.catalog.load_transfer(setting_id)
    key = f"downloads/{setting_id}/{fingerprint(data)[:24]}/{what}.{fmt}"
    if not svc.store.exists(key):
        svc.store.put_if_absent(key, downloads.build(data, what, fmt), downloads.MEDIA_TYPES[fmt])
    url = svc.store.url_for(key)
    if url is not None:
        return redirect(url, code=302)
    body = svc.store.get_bytes(key)
    response = Response(body, mimetype=downloads.MEDIA_TYPES[fmt].split(";")[0])
    response.headers["Content-Disposition"] = f'attachment; filename="{setting_id}-{what}.{fmt}"'
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
    path = svc.catalog.archive_path(setting_id, kind)
    if path is None:
        raise NotFound(f"the frozen data of '{setting_id}' has no {kind} archive", field="kind")
    stat = path.stat()
    key = f"archives/{setting_id}/{kind}/{stat.st_size}-{int(stat.st_mtime)}/{path.name}"
    if not svc.store.exists(key):
        svc.store.put_if_absent(key, path.read_bytes(), "application/octet-stream")
    url = svc.store.url_for(key)
    if url is not None:
        return redirect(url, code=302)
    response = Response(svc.store.get_bytes(key), mimetype="application/octet-stream")
    response.headers["Content-Disposition"] = f'attachment; filename="{path.name}"'
    return response
