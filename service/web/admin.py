"""Token management (admin only): create, list, revoke.

Every token is created for an owner the operator names (`owner`): the sealed
quota and the Ladder are kept per owner, so a revoked token's replacement
continues them instead of starting afresh.
"""

from __future__ import annotations

import re

from flask import Blueprint, jsonify, request

from service.web.context import require_admin, services
from service.errors import ValidationFailed

api = Blueprint("tokens", __name__)

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9 ._-]{0,63}")


_TOKEN_FIELDS = ("name", "owner", "admin")


def _json_body(allowed: tuple[str, ...]) -> dict:
    """The request's JSON object; a field outside `allowed` is an error, never ignored."""
    try:
        body = request.get_json(silent=True)
    except RecursionError:
        body = None
    if not isinstance(body, dict):
        raise ValidationFailed("the request body must be a JSON object", field="body")
    for field in body:
        if field not in allowed:
            raise ValidationFailed(f"'{str(field)[:80]}' is not a field of this request "
                                   f"(fields: {', '.join(allowed)})", field=str(field)[:80])
    return body


@api.post("/tokens")
def create_token():
    require_admin()
    body = _json_body(_TOKEN_FIELDS)
    name = body.get("name")
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise ValidationFailed("name must be 1-64 letters, digits, spaces or ._- starting with a "
                               f"letter or digit, got {name!r}", field="name")
    if "owner" not in body:
        raise ValidationFailed("owner is required: who the token is for (the sealed quota and "
                               "the Ladder are kept per owner, shared by all its tokens)",
                               field="owner")
    admin = body.get("admin", False)
    if not isinstance(admin, bool):
        raise ValidationFailed(f"admin must be true or false, got {admin!r}", field="admin")
    token, info = services().tokens.create(name, body["owner"], admin=admin)
    return jsonify({**info.to_dict(), "token": token}), 201


@api.get("/tokens")
def list_tokens():
    require_admin()
    return jsonify({"tokens": [info.to_dict() for info in services().tokens.list()]})


@api.delete("/tokens/<token_id>")
def revoke_token(token_id: str):
    require_admin()
    return jsonify(services().tokens.revoke(token_id).to_dict())
