"""The published leaderboard: JSON under the API, and the static site as published.

Both read files the publish job wrote into the object store; nothing is
computed per request and Redis is not touched.
"""

from __future__ import annotations

from flask import Blueprint, Response, redirect

from service.web.context import services
from service.errors import NotFound
from service.submissions import LEADERBOARD_PREFIX, content_type
from service.store import ObjectNotFound, check_key

api = Blueprint("leaderboard", __name__)
site = Blueprint("site", __name__)


def _published(path: str) -> bytes:
    try:
        return services().store.get_bytes(LEADERBOARD_PREFIX + path)
    except ObjectNotFound:
        raise NotFound(f"'{path}' is not published (yet)", field="path") from None


@api.get("/leaderboard")
def leaderboard_index():
    return Response(_published("index.json"), mimetype="application/json")


@api.get("/leaderboard/<setting_id>")
def leaderboard_setting(setting_id: str):
    services().catalog.get_setting(setting_id)
    return Response(_published(f"settings/{setting_id}.json"), mimetype="application/json")


@site.get("/")
def root():
    return redirect("/leaderboard/index.html", code=302)


@site.get("/leaderboard/")
def site_index():
    return redirect("/leaderboard/index.html", code=302)


@site.get("/docs/", defaults={"path": "index.html"})
@site.get("/docs/<path:path>")
def published_docs(path: str):
    """The site's documents at `/docs/...`, where nginx serves them too (`metrics.md` names
    the page `metrics.html`)."""
    page = path[:-3] + ".html" if path.endswith(".md") else path
    return redirect(f"/leaderboard/docs/{page}", code=302)


@site.get("/dataset/", defaults={"path": "index.html"})
@site.get("/dataset/<path:path>")
def published_dataset(path: str):
    """The dataset card and its `croissant.json` at `/dataset/...`, as under nginx."""
    return redirect(f"/leaderboard/dataset/{path}", code=302)


@site.get("/leaderboard/<path:path>")
def site_file(path: str):
    try:
        check_key(path)
    except ValueError:
        raise NotFound(f"'{path[:120]}' is not published", field="path") from None
    response = Response(_published(path), content_type=content_type(path))
    response.headers["Cache-Control"] = "public, max-age=30"
    return response
