"""The OpenAPI 3.0 description of the REST API, written by hand, and its HTML page.

Hand-written so that the document says what the API promises (error shapes,
status codes), not what a framework infers; `tests/test_api_openapi.py`
validates it and schemathesis checks the running API against it.
"""

from __future__ import annotations

import html

_ERROR = {"$ref": "#/components/schemas/Error"}


def _json(schema: dict, description: str) -> dict:
    return {"description": description, "content": {"application/json": {"schema": schema}}}


def _err(description: str) -> dict:
    return _json(_ERROR, description)


def _id_param(name: str, description: str) -> dict:
    return {"name": name, "in": "path", "required": True, "description": description,
            "schema": {"type": "string", "pattern": "^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$"}}


def _format_param(values: list[str], default: str) -> dict:
    return {"name": "format", "in": "query", "required": False,
            "schema": {"type": "string", "enum": values, "default": default}}


_SETTING = _id_param("setting_id", "A setting id, e.g. stack-replay-k10-a")
_SUBMISSION = _id_param("submission_id", "A submission id returned by POST /submissions")
_BINARY = {"type": "string", "format": "binary"}

_SCHEMAS = {
    "Error": {
        "type": "object", "required": ["error"],
        "properties": {"error": {
            "type": "object", "required": ["code", "message", "field"],
            "properties": {
                "code": {"type": "string", "description": "stable machine-readable code"},
                "message": {"type": "string", "description": "what is wrong, for humans"},
                "field": {"type": "string", "nullable": True,
                          "description": "the request field (or file column) at fault"},
                "source": {"type": "string", "description": "uploaded file name"},
                "line": {"type": "integer", "nullable": True,
                         "description": "1-based line in the uploaded file (header = 1)"},
                "value": {"type": "string", "nullable": True, "description": "offending value"},
                "retry_after": {"type": "integer"},
            }}},
    },
    "Completeness": {
        "type": "object",
        "required": ["cells_done", "cells_total", "complete", "share", "seeds_complete"],
        "properties": {"cells_done": {"type": "integer", "minimum": 0},
                       "cells_total": {"type": "integer", "minimum": 0},
                       "complete": {"type": "boolean"},
                       "share": {"type": "number", "minimum": 0, "maximum": 1},
                       "seeds_complete": {"type": "array", "items": {"type": "integer", "minimum": 0},
                                          "description": "seeds whose K x Q slice is fully executed"}},
    },
    "Setting": {
        "oneOf": [{"$ref": "#/components/schemas/RetrievalSetting"},
                  {"$ref": "#/components/schemas/ReadoutSetting"}],
        "description": "A retrieval setting (kind retrieval) or a readout setting (kind readout)",
    },
    "RetrievalSetting": {
        "type": "object",
        "required": ["id", "kind", "task", "mechanism", "k", "query_set", "sealed", "description",
                     "completeness", "downloads"],
        "properties": {
            "id": {"type": "string"}, "kind": {"type": "string", "enum": ["retrieval"]},
            "task": {"type": "string"},
            "mechanism": {"type": "string"}, "k": {"type": "integer", "minimum": 1},
            "query_set": {"type": "string"}, "sealed": {"type": "boolean"},
            "description": {"type": "string"},
            "completeness": {"$ref": "#/components/schemas/Completeness"},
            "downloads": {"type": "object", "additionalProperties": {"type": "string"}},
        },
    },
    "ReadoutSetting": {
        "type": "object",
        "description": "A readout bank as a setting (docs/readout.md): features, predictions or a "
                       "program audited on its confirm initializations, whose labels are sealed",
        "required": ["id", "kind", "task", "version", "sealed", "audited_split", "inputs",
                     "description", "accepts_submissions"],
        "properties": {
            "id": {"type": "string"}, "kind": {"type": "string", "enum": ["readout"]},
            "task": {"type": "string"}, "version": {"type": "string"},
            "coordinate": {"type": "string", "nullable": True},
            "unit": {"type": "string", "nullable": True},
            "sealed": {"type": "boolean"}, "audited_split": {"type": "string", "enum": ["confirm"]},
            "initializations": {"type": "object", "nullable": True,
                                "additionalProperties": {"type": "integer"},
                                "description": "initializations per split"},
            "observations": {"type": "object", "nullable": True,
                             "additionalProperties": {"type": "integer"},
                             "description": "observations per split"},
            "inputs": {"type": "array", "items": {"type": "string",
                                                  "enum": ["features", "predictions"]}},
            "description": {"type": "string"},
            "accepts_submissions": {"type": "boolean",
                                    "description": "false where the server lacks the sealed labels"},
            "unavailable_reason": {"type": "string", "nullable": True},
            "downloads": {"type": "object", "additionalProperties": {"type": "string"}},
        },
    },
    "SubmissionStatus": {
        "type": "object",
        "required": ["id", "state", "progress", "reason", "fault", "attempts", "reports", "name",
                     "settings", "created_at", "updated_at", "public", "status_url",
                     "report_urls", "selection_only"],
        "properties": {
            "id": {"type": "string"},
            "state": {"type": "string",
                      "enum": ["queued", "running", "scoring", "published", "failed"]},
            "progress": {"type": "number", "minimum": 0, "maximum": 1},
            "reason": {"type": "string", "nullable": True},
            "fault": {"type": "string", "nullable": True, "enum": ["submitter", "infrastructure", None]},
            "attempts": {"type": "integer", "minimum": 0},
            "reports": {"type": "array", "items": {"type": "string"}},
            "name": {"type": "string"},
            "settings": {"type": "array", "items": {"type": "string"}},
            "created_at": {"type": "string"}, "updated_at": {"type": "string"},
            "public": {"type": "boolean"}, "selection_only": {"type": "boolean"},
            "status_url": {"type": "string"},
            "report_urls": {"type": "object", "additionalProperties": {
                "type": "object", "properties": {"json": {"type": "string"},
                                                 "html": {"type": "string"}}}},
            "kind": {"type": "string", "enum": ["scores", "container", "features", "predictions"],
                     "description": "scores (a scores file), container (a selector), features or "
                                    "predictions (a readout setting; features made by a program "
                                    "have a selector block)"},
            "rollouts": {"type": "object", "nullable": True,
                         "description": "matrix cells computed on demand while the audit waits",
                         "properties": {"done": {"type": "integer"}, "total": {"type": "integer"},
                                        "chunks_pending": {"type": "integer"},
                                        "runners": {"type": "integer", "nullable": True}}},
            "selector": {"type": "object", "description": "submissions the service runs a program "
                                                         "of: selectors, readout programs",
                         "properties": {"backend": {"type": "string", "enum": ["local", "docker"]},
                                        "image": {"type": "string", "nullable": True},
                                        "archive_sha256": {"type": "string", "nullable": True},
                                        "run_url": {"type": "string"},
                                        "run": {"type": "object", "nullable": True}}},
        },
    },
    "SelectorRun": {
        "type": "object",
        "required": ["status", "reason", "exit_code", "stdout_tail", "stderr_tail",
                     "wall_seconds", "image_digest"],
        "properties": {
            "status": {"type": "string", "enum": ["ok", "timeout", "oom", "pids_limit",
                                                  "output_limit", "crashed", "output_invalid",
                                                  "setup_failed"]},
            "reason": {"type": "string"}, "exit_code": {"type": "integer", "nullable": True},
            "stdout_tail": {"type": "string"}, "stderr_tail": {"type": "string"},
            "wall_seconds": {"type": "number"}, "image_digest": {"type": "string", "nullable": True},
            "setting_id": {"type": "string"}, "backend": {"type": "string"},
        },
    },
    "Token": {
        "type": "object",
        "required": ["token_id", "name", "owner", "admin", "created_at", "revoked"],
        "properties": {"token_id": {"type": "string"}, "name": {"type": "string"},
                       "owner": {"type": "string"},
                       "admin": {"type": "boolean"}, "created_at": {"type": "string"},
                       "revoked": {"type": "boolean"},
                       "token": {"type": "string", "description": "the secret; shown once"}},
    },
    "Report": {"type": "object", "required": ["schema_version"],
               "properties": {"schema_version": {"type": "string"}},
               "description": "The audit report (AuditReport.to_dict(); see docs/api.md), or on a "
                              "readout setting the served readout report "
                              "(expaudit-readout-submission/1; see docs/readout.md)"},
    "Leaderboard": {"type": "object", "required": ["schema_version"],
                    "properties": {"schema_version": {"type": "string"}}},
}

_AUTH = [{"bearer": []}]
_UNAUTH = _err("Missing, malformed, unknown or revoked token")
_RATE = _err("Rate limit, concurrency cap, or too many invalid tokens from this address "
              "(see Retry-After)")
_NOTFOUND = _err("Not found (or not visible to this caller)")
_FOREIGN = _err("A public submission of someone else (only its owner or the admin may change it)")
_RENAME = {"type": "object", "required": ["name"], "properties": {"name": {
    "type": "string", "minLength": 1, "maxLength": 100,
    "description": "1-100 letters, digits, spaces or .,:()+/-, not only spaces"}}}


def _table_download(summary: str) -> dict:
    """A setting's table as Parquet, CSV (the default) or JSON rows."""
    return {"get": {
        "summary": summary, "tags": ["downloads"],
        "parameters": [_SETTING, _format_param(["parquet", "csv", "json"], "csv")],
        "responses": {
            "200": {"description": "The table", "content": {
                "application/vnd.apache.parquet": {"schema": _BINARY},
                "text/csv": {"schema": {"type": "string"}},
                "application/json": {"schema": {"type": "array", "items": {"type": "object"}}}}},
            "302": {"description": "Redirect to a presigned URL"},
            "404": _NOTFOUND, "422": _err("Unknown format")}}}


def _settings_paths() -> dict:
    """Settings and their downloads."""
    return {
        "/api/v1/settings": {"get": {
            "summary": "List the settings with their matrix completeness", "tags": ["settings"],
            "responses": {"200": _json({"type": "object", "required": ["settings"], "properties": {
                "settings": {"type": "array", "items": {"$ref": "#/components/schemas/Setting"}}}},
                "Every setting")}}},
        "/api/v1/settings/{setting_id}": {"get": {
            "summary": "One setting, with completeness and download links", "tags": ["settings"],
            "parameters": [_SETTING],
            "responses": {"200": _json({"$ref": "#/components/schemas/Setting"}, "The setting"),
                          "404": _NOTFOUND}}},
        "/api/v1/settings/{setting_id}/outcomes": {"get": {
            "summary": "Download the outcome tensor (Parquet/CSV long table, or NPZ)",
            "description": "Redirects (302) to a presigned URL when the store is S3.",
            "tags": ["downloads"], "parameters": [_SETTING, _format_param(["parquet", "csv", "npz"], "parquet")],
            "responses": {
                "200": {"description": "The file", "content": {
                    "application/vnd.apache.parquet": {"schema": _BINARY},
                    "text/csv": {"schema": {"type": "string"}},
                    "application/octet-stream": {"schema": _BINARY}}},
                "302": {"description": "Redirect to a presigned URL"},
                "403": _err("The setting is sealed"), "404": _NOTFOUND,
                "422": _err("Unknown format")}}},
        "/api/v1/settings/{setting_id}/scenes": _table_download("Download the scene metadata"),
        "/api/v1/settings/{setting_id}/experiences": _table_download(
            "Download the library's experience ids in library order"),
        "/api/v1/settings/{setting_id}/archives/{kind}": {"get": {
            "summary": "Download the images or library archive where the frozen data has one",
            "tags": ["downloads"],
            "parameters": [_SETTING, {"name": "kind", "in": "path", "required": True,
                                      "schema": {"type": "string", "enum": ["images", "library"]}}],
            "responses": {"200": {"description": "The archive", "content": {
                "application/octet-stream": {"schema": _BINARY}}},
                "302": {"description": "Redirect to a presigned URL"}, "404": _NOTFOUND}}},
        "/api/v1/settings/{setting_id}/selector-input": {"get": {
            "summary": "The exact /input tree a container submission on the setting gets (.tar.gz)",
            "description": "What `expaudit selector input SETTING DIR` unpacks; no outcome is in "
                           "it. On a readout setting, what `expaudit readout input SETTING DIR` "
                           "unpacks: the images of train, dev and confirm and the public labels of "
                           "train and dev, never a sealed label. 404 where the setting takes no "
                           "selector submissions.",
            "tags": ["downloads"], "parameters": [_SETTING],
            "responses": {"200": {"description": "The tree, every entry under input/",
                                  "content": {"application/gzip": {"schema": _BINARY}}},
                          "302": {"description": "Redirect to a presigned URL"},
                          "404": _NOTFOUND}}},
        "/api/v1/settings/{setting_id}/files/{name}": {"get": {
            "summary": "A readout bank's public file (observations, train and dev labels, image "
                       "shards), as listed in the setting's downloads",
            "tags": ["downloads"],
            "parameters": [_SETTING, {"name": "name", "in": "path", "required": True,
                                      "schema": {"type": "string"}}],
            "responses": {"200": {"description": "The file", "content": {
                "application/octet-stream": {"schema": _BINARY}}},
                "302": {"description": "Redirect to a presigned URL"}, "404": _NOTFOUND}}},
        "/api/v1/settings/{setting_id}/base-images": {"get": {
            "summary": "The base-scene PNG of every experience of the setting (.tar)",
            "tags": ["downloads"], "parameters": [_SETTING],
            "responses": {"200": {"description": "<experience_id>.png per experience",
                                  "content": {"application/x-tar": {"schema": _BINARY}}},
                          "302": {"description": "Redirect to a presigned URL"},
                          "404": _NOTFOUND}}},
        "/api/v1/settings/{setting_id}/trajectories": {"get": {
            "summary": "Every experience's recorded target path (x, y, z, yaw, grip, phase)",
            "tags": ["downloads"], "parameters": [_SETTING],
            "responses": {"200": {"description": "setting_id, path_columns, experience_ids and "
                                                 "trajectories {experience_id: {path: rows}}",
                                  "content": {"application/json": {"schema": {"type": "object"}}}},
                          "302": {"description": "Redirect to a presigned URL"},
                          "404": _NOTFOUND}}},
    }


def _submission_paths() -> dict:
    """Submissions: create, list, status, report, publish, withdraw, rename."""
    return {
        "/api/v1/submissions": {
            "post": {
                "summary": "Submit a scores file (CSV, Parquet or JSON) for one or many settings, "
                           "a selector the service runs, or on a readout setting features, "
                           "predictions (Parquet or NPZ) or a program",
                "description": (
                    "Columns scene_id, experience_id, score (or without score for a "
                    "selection-only submission), and optionally setting_id to cover several "
                    "settings in one file. Validated at once (422 names file, line, field "
                    "and value); the audit runs in the background. Send a multipart form "
                    "(file + fields) or the raw file as the body with the fields as query "
                    "parameters. A container submission is a multipart form with one setting "
                    "and, instead of file, either a selector part (a .tar.gz of a selector "
                    "directory, local sandbox) or an image field (a Docker image pinned by "
                    "digest); see docs/selector_protocol.md. Sealed settings take a limited "
                    "number of submissions per token owner per day (429 sealed_quota). On a "
                    "readout setting (kind readout, docs/readout.md) the file holds features "
                    "(input=features, the default: observation_id and f0..f{D-1}, or NPZ arrays "
                    "observation_id and features) or predictions (input=predictions: "
                    "observation_id and prediction), as Parquet or NPZ (format from the file "
                    "name or format=parquet|npz); a selector part or image there is a program "
                    "that writes features. Readout submissions count against the sealed quota."),
                "tags": ["submissions"], "security": _AUTH,
                "parameters": [
                    {"name": "Idempotency-Key", "in": "header", "required": False,
                     "schema": {"type": "string", "minLength": 1, "maxLength": 200}},
                    {"name": "setting", "in": "query", "required": False,
                     "schema": {"type": "string"}, "description": "setting id(s), comma-separated"},
                    {"name": "name", "in": "query", "required": False, "schema": {"type": "string"}},
                    {"name": "public", "in": "query", "required": False,
                     "schema": {"type": "string", "enum": ["true", "false"]}},
                    {"name": "format", "in": "query", "required": False,
                     "schema": {"type": "string", "enum": ["csv", "parquet", "json", "npz"]},
                     "description": "npz: a readout setting's upload only"},
                    {"name": "input", "in": "query", "required": False,
                     "schema": {"type": "string", "enum": ["features", "predictions"]},
                     "description": "a readout setting's upload: what the file holds"},
                    {"name": "filename", "in": "query", "required": False,
                     "schema": {"type": "string"}}],
                "requestBody": {"required": True, "content": {
                    "multipart/form-data": {"schema": {
                        "type": "object",
                        "properties": {"file": _BINARY, "selector": _BINARY,
                                       "image": {"type": "string"}, "setting": {"type": "string"},
                                       "name": {"type": "string"},
                                       "public": {"type": "string", "enum": ["true", "false"]},
                                       "format": {"type": "string",
                                                  "enum": ["csv", "parquet", "json", "npz"]},
                                       "input": {"type": "string",
                                                 "enum": ["features", "predictions"]}}}},
                    "text/csv": {"schema": {"type": "string"}},
                    "application/vnd.apache.parquet": {"schema": _BINARY},
                    "application/json": {"schema": {"type": "array", "items": {"type": "object"}}}}},
                "responses": {
                    "202": _json({"$ref": "#/components/schemas/SubmissionStatus"},
                                 "Accepted; poll status_url"),
                    "400": _err("Malformed request"), "401": _UNAUTH,
                    "404": _NOTFOUND,
                    "409": _err("Idempotency-Key reused with another body, or setting incomplete"),
                    "413": _err("Upload larger than the size limit (the message names the "
                                "limit; GET /api/v1/limits gives it)"),
                    "422": _err("The scores, features or predictions file, the selector or a "
                                "field is invalid"), "429": _RATE,
                    "503": _err("The store or Redis is unavailable or the store refuses writes, "
                                "or the submission of this Idempotency-Key is still being written "
                                "(see Retry-After)")}},
            "get": {
                "summary": "List my submissions, newest first", "tags": ["submissions"],
                "security": _AUTH,
                "parameters": [{"name": "limit", "in": "query", "required": False,
                                "schema": {"type": "integer", "minimum": 1, "maximum": 1000}}],
                "responses": {"200": _json({"type": "object", "required": ["submissions"], "properties": {
                    "submissions": {"type": "array",
                                    "items": {"$ref": "#/components/schemas/SubmissionStatus"}}}},
                    "My submissions"), "401": _UNAUTH, "422": _err("Bad limit"), "429": _RATE}}},
        "/api/v1/submissions/{submission_id}": {"get": {
            "summary": "Status of a submission (owner, admin, or anyone once public)",
            "tags": ["submissions"], "parameters": [_SUBMISSION],
            "responses": {"200": _json({"$ref": "#/components/schemas/SubmissionStatus"}, "Status"),
                          "401": _UNAUTH, "404": _NOTFOUND, "429": _RATE}}},
        "/api/v1/submissions/{submission_id}/report": {"get": {
            "summary": "The audit report (JSON or HTML) of one setting of a submission",
            "tags": ["submissions"],
            "parameters": [_SUBMISSION,
                           {"name": "setting", "in": "query", "required": False, "schema": {"type": "string"}},
                           {"name": "format", "in": "query", "required": False,
                            "schema": {"type": "string", "enum": ["json", "html"], "default": "json"}}],
            "responses": {"200": {"description": "The report", "content": {
                "application/json": {"schema": {"$ref": "#/components/schemas/Report"}},
                "text/html": {"schema": {"type": "string"}}}},
                "401": _UNAUTH, "404": _NOTFOUND, "409": _err("Report not written yet"),
                "422": _err("Bad setting or format"), "429": _RATE}}},
        "/api/v1/submissions/{submission_id}/run": {"get": {
            "summary": "How a container submission's selector run ended, with its stdout and "
                       "stderr tails (owner or admin only)",
            "tags": ["submissions"], "security": _AUTH, "parameters": [_SUBMISSION],
            "responses": {"200": _json({"$ref": "#/components/schemas/SelectorRun"}, "The run"),
                          "401": _UNAUTH, "404": _NOTFOUND,
                          "409": _err("The selector has not run yet"), "429": _RATE}}},
        "/api/v1/submissions/{submission_id}/publish": {"post": {
            "summary": "Make my submission public (its rows join the leaderboard)",
            "tags": ["submissions"], "security": _AUTH, "parameters": [_SUBMISSION],
            "responses": {"200": _json({"$ref": "#/components/schemas/SubmissionStatus"}, "Now public"),
                          "401": _UNAUTH, "404": _NOTFOUND,
                          "409": _err("The submission failed"), "429": _RATE}}},
        "/api/v1/submissions/{submission_id}/withdraw": {"post": {
            "summary": "Take my submission off the public leaderboard (private again; the admin "
                       "token: any submission)",
            "description": "Its rows leave the leaderboard at the next rebuild; publishing it "
                           "again is allowed. 404 where the caller cannot see the submission, "
                           "403 where it is public but not theirs.",
            "tags": ["submissions"], "security": _AUTH, "parameters": [_SUBMISSION],
            "responses": {"200": _json({"$ref": "#/components/schemas/SubmissionStatus"}, "Now private"),
                          "401": _UNAUTH, "403": _FOREIGN, "404": _NOTFOUND, "429": _RATE}}},
        "/api/v1/submissions/{submission_id}/rename": {"post": {
            "summary": "Give my submission a new display name (the admin token: any submission)",
            "description": "The name follows the rules of the upload's name field; a public "
                           "submission's rows show it from the next rebuild.",
            "tags": ["submissions"], "security": _AUTH, "parameters": [_SUBMISSION],
            "requestBody": {"required": True, "content": {
                "application/json": {"schema": _RENAME},
                "application/x-www-form-urlencoded": {"schema": _RENAME}}},
            "responses": {"200": _json({"$ref": "#/components/schemas/SubmissionStatus"}, "Renamed"),
                          "401": _UNAUTH, "403": _FOREIGN, "404": _NOTFOUND,
                          "422": _err("No name, or a name that is not allowed"), "429": _RATE}}},
    }


def _leaderboard_paths() -> dict:
    """The published leaderboard."""
    return {
        "/api/v1/leaderboard": {"get": {
            "summary": "The published leaderboard index (every setting, whether it discriminates, "
                       "best-fixed, the best submission, and the cross-setting summary)",
            "tags": ["leaderboard"],
            "responses": {"200": _json({"$ref": "#/components/schemas/Leaderboard"}, "Index"),
                          "404": _err("Nothing published yet")}}},
        "/api/v1/leaderboard/{setting_id}": {"get": {
            "summary": "The published rows of one setting", "tags": ["leaderboard"],
            "parameters": [_SETTING],
            "responses": {"200": _json({"$ref": "#/components/schemas/Leaderboard"}, "Rows"),
                          "404": _NOTFOUND}}},
    }


def _token_paths() -> dict:
    """Token management (admin)."""
    return {
        "/api/v1/tokens": {
            "post": {
                "summary": "Create a token (admin); the secret is in the response only",
                "tags": ["tokens"], "security": _AUTH,
                "requestBody": {"required": True, "content": {"application/json": {"schema": {
                    "type": "object", "required": ["name", "owner"], "additionalProperties": False,
                    "properties": {"name": {"type": "string"},
                                   "owner": {"type": "string", "description":
                                             "who the token is for; the sealed quota and the "
                                             "Ladder are kept per owner"},
                                   "admin": {"type": "boolean"}}}}}},
                "responses": {"201": _json({"$ref": "#/components/schemas/Token"}, "Created"),
                              "401": _UNAUTH, "403": _err("Not the admin token"),
                              "422": _err("Bad or missing name or owner, bad admin flag, or a field "
                                          "that is not name, owner or admin"),
                              "429": _RATE}},
            "get": {
                "summary": "List tokens (admin; never the secrets)", "tags": ["tokens"],
                "security": _AUTH,
                "responses": {"200": _json({"type": "object", "required": ["tokens"], "properties": {
                    "tokens": {"type": "array", "items": {"$ref": "#/components/schemas/Token"}}}},
                    "Tokens"), "401": _UNAUTH, "403": _err("Not the admin token"), "429": _RATE}}},
        "/api/v1/tokens/{token_id}": {"delete": {
            "summary": "Revoke a token (admin)", "tags": ["tokens"], "security": _AUTH,
            "parameters": [_id_param("token_id", "The token's public id")],
            "responses": {"200": _json({"$ref": "#/components/schemas/Token"}, "Revoked"),
                          "401": _UNAUTH, "403": _err("Not the admin token"), "404": _NOTFOUND,
                          "409": _err("Already revoked (the revocation is written to the token "
                                      "cache again)"), "429": _RATE}}},
    }


def _ops_paths() -> dict:
    """Health and metrics (outside /api/v1), and the upload limit."""
    return {
        "/healthz": {"get": {
            "summary": "Liveness and dependencies (store, Redis)", "tags": ["operations"],
            "responses": {
                "200": _json({"type": "object", "required": ["status"],
                              "properties": {"status": {"type": "string"}, "store": {"type": "string"},
                                             "redis": {"type": "string"}}}, "Healthy"),
                "503": _json({"type": "object", "required": ["status"],
                              "properties": {"status": {"type": "string"}, "store": {"type": "string"},
                                             "redis": {"type": "string"}}},
                             "A dependency is down, or the store refuses writes (each says why)")}}},
        "/api/v1/limits": {"get": {
            "summary": "This server's upload limit (a client checks a file against it before "
                       "sending)", "tags": ["operations"],
            "responses": {"200": _json({"type": "object", "required": ["max_upload_bytes"],
                                        "properties": {"max_upload_bytes": {"type": "integer"}}},
                                       "The limits")}}},
        "/metrics": {"get": {
            "summary": "Prometheus metrics", "tags": ["operations"],
            "responses": {"200": {"description": "Text exposition format",
                                  "content": {"text/plain": {"schema": {"type": "string"}}}}}}},
    }


def _paths() -> dict:
    return {**_settings_paths(), **_submission_paths(), **_leaderboard_paths(), **_token_paths(),
            **_ops_paths()}


def openapi_document() -> dict:
    """The OpenAPI 3.0.3 document of the REST API."""
    return {
        "openapi": "3.0.3",
        "info": {"title": "expaudit benchmark service", "version": "1.0.0",
                 "description": "Submit experience-retrieval selectors, read audits and the "
                                "leaderboard, download the benchmark's transfer matrices; submit "
                                "a representation's features, predictions or program to a readout "
                                "setting and read its readout audit."},
        "paths": _paths(),
        "components": {
            "schemas": _SCHEMAS,
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer",
                                           "description": "a token from POST /api/v1/tokens"}},
        },
    }


def docs_page(document: dict) -> str:
    """A self-contained HTML page listing every operation (no script, no CDN): phone-width,
    with a link back to the leaderboard (the service is served at the root)."""
    esc = html.escape
    parts = ["<!doctype html><html lang='en'><head><meta charset='utf-8'>",
             "<meta name='viewport' content='width=device-width, initial-scale=1'>",
             f"<title>{esc(document['info']['title'])} API</title><style>",
             "body{font-family:system-ui,sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem}",
             "h2{border-bottom:1px solid #ccc}code{background:#f4f4f4;padding:0 .2em}",
             ".op{margin:1rem 0;padding:.5rem 1rem;border-left:4px solid #36c}",
             ".m{font-weight:bold;text-transform:uppercase;margin-right:.5em}",
             "table{border-collapse:collapse;display:block;overflow-x:auto}",
             "td,th{border:1px solid #ddd;padding:.2em .5em}code{overflow-wrap:anywhere}",
             "</style></head><body>",
             "<nav><a href='/'>leaderboard</a></nav>",
             f"<h1>{esc(document['info']['title'])} <small>v{esc(document['info']['version'])}</small></h1>",
             f"<p>{esc(document['info']['description'])}</p>",
             "<p>Machine-readable: <a href='/api/v1/openapi.json'>openapi.json</a>. "
             "Authenticate with <code>Authorization: Bearer &lt;token&gt;</code>.</p>"]
    for path, operations in document["paths"].items():
        parts.append(f"<h2><code>{esc(path)}</code></h2>")
        for method, op in operations.items():
            parts.append(f"<div class='op'><span class='m'>{esc(method)}</span>{esc(op['summary'])}")
            if op.get("description"):
                parts.append(f"<p>{esc(op['description'])}</p>")
            if op.get("security"):
                parts.append("<p><em>Needs a bearer token.</em></p>")
            params = op.get("parameters", [])
            if params:
                parts.append("<table><tr><th>parameter</th><th>in</th><th>schema</th></tr>")
                for p in params:
                    schema = p.get("schema", {})
                    shown = ", ".join(schema.get("enum", [])) or schema.get("type", "")
                    parts.append(f"<tr><td><code>{esc(p['name'])}</code></td><td>{esc(p['in'])}</td>"
                                 f"<td>{esc(str(shown))}</td></tr>")
                parts.append("</table>")
            codes = ", ".join(f"{esc(code)} {esc(r['description'])}"
                              for code, r in op["responses"].items())
            parts.append(f"<p>Responses: {codes}</p></div>")
    parts.append("</body></html>")
    return "".join(parts)
