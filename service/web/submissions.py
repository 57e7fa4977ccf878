"""Submissions: create (202 + status URL), status, reports, list mine, publish, withdraw, rename."""

from __future__ import annotations

import hashlib
import logging
import re
import time
from dataclasses import dataclass
from pathlib import PurePosixPath

from flask import Blueprint, Response, current_app, jsonify, request

from service.selectors import submissions as container_submissions

from service.process import defaults, tolerated

from service.queues import jobs
from service.web.context import Services, current_token, services
from service.errors import Conflict, Forbidden, NotFound, ServiceUnavailable, ValidationFailed
from service.submissions import (DIRTY_KEY, PUBLIC_MEMORY_S, Manifest, State, catalog_limits,
                                 new_submission_id, request_fields, utc_now)
from service.sealed import give_back_sealed_quota, sealed_settings, take_sealed_quota
from service.store import ObjectNotFound, StoreError
from service.web.readout_uploads import check_readout_program, check_readout_upload, readout_setting
from leaderboard.scores import (SettingScores, detect_format, encode_scores, read_frame,
                                requested_settings, validate_upload)

log = logging.getLogger(__name__)

api = Blueprint("submissions", __name__)

_FINAL_DOCUMENTS = "expaudit.final_status_documents"


class FinalDocuments:
    """Per-process memory of the status documents of final submissions, as sent.

    A published or failed submission's status, reports and selector run are
    never rewritten (the jobs end there and the reconciler only handles open
    submissions), so its document can be answered without reading the store.
    Keyed by (id, script root, public): making a submission public names another
    entry. Visibility is still checked on every request (`_visible`) before the
    memory is consulted. Its owner can also withdraw or rename a final submission,
    so a document is trusted for `PUBLIC_MEMORY_S` (the process that made the
    change forgets it at once). Bounded: emptied when full.
    """

    def __init__(self, max_items: int = 10_000) -> None:
        self.max_items = max_items
        self._bodies: dict[tuple[str, str, bool], tuple[float, bytes]] = {}

    def get(self, key: tuple[str, str, bool]) -> bytes | None:
        kept = self._bodies.get(key)
        if kept is None or time.monotonic() - kept[0] >= PUBLIC_MEMORY_S:
            return None
        return kept[1]

    def put(self, key: tuple[str, str, bool], body: bytes) -> None:
        if len(self._bodies) >= self.max_items:
            self._bodies.clear()
        self._bodies[key] = (time.monotonic(), body)

    def forget(self, sid: str) -> None:
        for key in [k for k in self._bodies if k[0] == sid]:
            del self._bodies[key]


@api.record_once
def _install_final_documents(state) -> None:
    state.app.extensions.setdefault(_FINAL_DOCUMENTS, FinalDocuments())


_NAME_CHARS = r"\w .,:()+/-"
"""What a display name is made of: letters, digits, spaces and .,:()+/-."""
_NAME_PATTERN = re.compile(f"[{_NAME_CHARS}]{{1,100}}")
_FLAGS = {"true": True, "false": False, "": False}
"""The values of a flag field (any case; absent or empty is false): what the API document
and the error say, so a `yes` or `1` slip is refused rather than read as consent to publish."""


@dataclass(frozen=True)
class Upload:
    """The parts of a create request, from a multipart form or a raw body."""

    data: bytes
    filename: str
    content_type: str | None
    fields: dict[str, str]


def _read_upload() -> Upload:
    fields = request_fields(request)
    if request.mimetype == "multipart/form-data":
        file = request.files.get("file")
        if file is None:
            raise ValidationFailed("multipart upload needs a 'file' part", field="file")
        name = PurePosixPath(file.filename or "upload").name or "upload"
        return Upload(file.read(), name, file.mimetype, fields)
    data = request.get_data(cache=False)
    name = PurePosixPath(fields.get("filename", "upload")).name or "upload"
    return Upload(data, name, request.mimetype, fields)


def _flag(fields: dict[str, str], name: str) -> bool:
    value = fields.get(name, "").strip().lower()
    if value not in _FLAGS:
        raise ValidationFailed(f"{name} must be true or false, got '{fields[name][:80]}'",
                               field=name)
    return _FLAGS[value]


def _display_name(fields: dict[str, str], filename: str) -> str:
    """The `name` field, checked; without one (or empty), the file's stem made into a valid name."""
    if not fields.get("name"):
        stem = re.sub(f"[^{_NAME_CHARS}]+", "-", PurePosixPath(filename).stem)[:100].strip()
        return stem or "unnamed"
    name = fields["name"]
    if not _NAME_PATTERN.fullmatch(name) or not name.strip():
        bad = re.search(f"[^{_NAME_CHARS}]", name)
        why = (f"character {bad.group()!r} at position {bad.start() + 1} is not allowed" if bad
               else f"it is {len(name)} characters long" if len(name) > 100 else "it is only spaces")
        raise ValidationFailed(f"name must be 1-100 letters, digits, spaces or .,:()+/- "
                               f"characters, not only spaces: {why}, got {name[:120]!r}",
                               field="name")
    return name


def _idempotent_replay(svc: Services, owner: str, key: str | None, body_hash: str):
    """The earlier submission for this Idempotency-Key, or None for a new key."""
    if key is None:
        return None
    if not 1 <= len(key) <= 200:
        raise ValidationFailed("Idempotency-Key must be 1-200 characters", field="Idempotency-Key")
    earlier = svc.repo.recall_idempotency(owner, hashlib.sha256(key.encode()).hexdigest())
    if earlier is None:
        return None
    if earlier["body_sha256"] != body_hash:
        raise Conflict("this Idempotency-Key was used with a different request body",
                       field="Idempotency-Key")
    return earlier["submission_id"]


def _body_hash(upload: Upload) -> str:
    """What makes two create requests the same request: the bytes, the file's name and type, every field."""
    digest = hashlib.sha256(upload.data)
    digest.update(f"\0filename={upload.filename}\0content_type={upload.content_type}".encode())
    for key in sorted(upload.fields):
        digest.update(f"\0{key}={upload.fields[key]}".encode())
    return digest.hexdigest()


def _check_complete(svc: Services, setting_ids: list[str]) -> None:
    """Incomplete settings take submissions only when runners can fill them."""
    for setting_id in setting_ids:
        done = svc.catalog.completeness(setting_id)
        if not done.complete and not svc.catalog.fillable(setting_id):
            raise Conflict(f"setting '{setting_id}' has {done.cells_total - done.cells_done} "
                           "outcome cells not executed yet; submissions open when it is complete",
                           field="setting", code="setting_incomplete")


@dataclass(frozen=True)
class Prepared:
    """A checked create request: what to store and the manifest fields it decides."""

    data: bytes
    filename: str
    input_format: str
    setting_ids: list[str]
    selection_only: bool
    kind: str = "scores"
    backend: str | None = None
    image: str | None = None
    validated: tuple[SettingScores, ...] = ()
    """A scores file's validated table, stored beside it for the worker (parsed once)."""
    table: bytes | None = None
    """A readout upload's checked table (`leaderboard.readout.upload.encode_upload`)."""


def _prepare_scores(svc: Services, upload: Upload) -> Prepared:
    fmt = detect_format(upload.filename, upload.content_type, upload.fields.get("format"))
    frame = read_frame(upload.data, fmt, upload.filename, catalog_limits(svc.catalog))
    validated = validate_upload(frame, requested_settings(upload.fields.get("setting")),
                                svc.catalog, upload.filename)
    return Prepared(upload.data, upload.filename, fmt, [v.setting_id for v in validated],
                    all(v.selection_only for v in validated), validated=tuple(validated))


def _prepare_container(svc: Services, upload: Upload) -> Prepared:
    checked = container_submissions.check_selector(upload.data, upload.filename, upload.fields,
                                                   svc.catalog, svc.config.sandbox)
    return Prepared(checked.data, checked.filename, checked.input_format, [checked.setting_id],
                    False, kind="container", backend=checked.backend, image=checked.image)


def _prepare_readout(svc: Services, upload: Upload, setting_id: str, name: str) -> Prepared:
    checked = check_readout_upload(svc, setting_id, upload.data, upload.filename, upload.fields, name)
    return Prepared(upload.data, upload.filename, checked.input_format, [setting_id], False,
                    kind=checked.kind, table=checked.table)


def _prepare_program(svc: Services, upload: Upload, setting_id: str) -> Prepared:
    """A program on a readout setting: a features submission whose features its run makes."""
    checked = container_submissions.check_program(upload.data, upload.filename, upload.fields,
                                                  svc.config.sandbox, setting_id)
    check_readout_program(svc, setting_id)
    return Prepared(checked.data, checked.filename, checked.input_format, [setting_id], False,
                    kind="features", backend=checked.backend, image=checked.image)


def _accepted(sid: str, replayed: bool = False) -> Response:
    document = _status_document(services(), sid)
    response = jsonify(document)
    response.status_code = 202
    response.headers["Location"] = document["status_url"]
    if replayed:
        response.headers["Idempotent-Replayed"] = "true"
    return response


@api.post("/submissions")
def create_submission():
    svc = services()
    token = current_token(required=True)
    container = container_submissions.is_container_request(request)
    if container:
        data, name, fields = container_submissions.read_selector_request(request)
        upload = Upload(data, name, None, fields)
    else:
        upload = _read_upload()
    body_hash = _body_hash(upload)
    key = request.headers.get("Idempotency-Key")
    replay = _idempotent_replay(svc, token.token_id, key, body_hash)
    if replay is not None and svc.repo.exists(replay):
        return _accepted(_written(svc, replay), replayed=True)
    slot = svc.active.reserve(token.token_id, svc.config.max_active_submissions)
    try:
        return _create_in_slot(svc, token, upload, container, key, replay, body_hash, slot)
    finally:
        svc.active.release(token.token_id, slot)  # no-op once the slot became the submission


def _create_in_slot(svc: Services, token, upload: Upload, container: bool, key: str | None,
                    replay: str | None, body_hash: str, slot: str | None) -> Response:
    """Check the request and create the submission in the concurrency slot `slot`."""
    name = _display_name(upload.fields, upload.filename.split("@")[0])  # image: its repository
    public = _flag(upload.fields, "public")
    readout = readout_setting(svc, upload.fields)
    if readout is not None:  # confirm labels are sealed: counted like a sealed setting
        prepared = (_prepare_program(svc, upload, readout) if container
                    else _prepare_readout(svc, upload, readout, name))
        sealed = [readout]
    else:
        prepared = _prepare_container(svc, upload) if container else _prepare_scores(svc, upload)
        _check_complete(svc, prepared.setting_ids)
        sealed = sealed_settings(svc.catalog, prepared.setting_ids)
    claim = None
    if sealed:
        claim = take_sealed_quota(svc.redis, svc.store, token.owner,  # per owner, not token
                                  svc.config.sealed_submissions_per_day)
    created = Created()
    try:
        return _create(svc, token, key, replay, body_hash, prepared, name, public, slot, created,
                       claim_key=None if claim is None else claim.key)
    finally:
        # Counted only if this request made a submission: not for an answer that repeats a
        # concurrent request's (same Idempotency-Key), nor for a failure before the manifest.
        if claim is not None and not created.made:
            give_back_sealed_quota(svc.redis, svc.store, claim)


@dataclass
class Created:
    """Whether a create request stored a new submission (set the moment its manifest is)."""

    made: bool = False


def _create(svc: Services, token, key: str | None, replay: str | None, body_hash: str,
            prepared: Prepared, name: str, public: bool, slot: str | None = None,
            created: Created | None = None, claim_key: str | None = None) -> Response:
    """Store the input and the manifest (with the sealed quota claim it was counted under,
    `claim_key`), then enqueue the audit."""
    created = created if created is not None else Created()
    sha = hashlib.sha256(prepared.data).hexdigest()
    input_key = f"inputs/sha256/{sha}"
    svc.store.put_if_absent(input_key, prepared.data)
    scores_key = None
    if prepared.validated:
        scores = encode_scores(list(prepared.validated))
        scores_key = f"inputs/scores/sha256/{hashlib.sha256(scores).hexdigest()}"
        svc.store.put_if_absent(scores_key, scores)
    if prepared.table is not None:
        scores_key = f"inputs/readout/sha256/{hashlib.sha256(prepared.table).hexdigest()}"
        svc.store.put_if_absent(scores_key, prepared.table)
    sid = replay or new_submission_id()
    if key is not None and replay is None:
        key_hash = hashlib.sha256(key.encode()).hexdigest()
        if not svc.repo.remember_idempotency(token.token_id, key_hash, sid, body_hash):
            winner = svc.repo.recall_idempotency(token.token_id, key_hash)["submission_id"]
            if svc.repo.exists(winner):
                return _accepted(_written(svc, winner), replayed=True)
            sid = winner
    manifest = Manifest(submission_id=sid, owner=token.token_id, owner_name=token.name, name=name,
                        settings=tuple(prepared.setting_ids), input_key=input_key,
                        input_sha256=sha, input_format=prepared.input_format,
                        filename=prepared.filename, selection_only=prepared.selection_only,
                        created_at=utc_now(), kind=prepared.kind,
                        selector_backend=prepared.backend, selector_image=prepared.image,
                        token_owner=token.owner, scores_key=scores_key,
                        sealed_claim=claim_key)
    try:
        svc.repo.create(manifest)
    except FileExistsError:  # a concurrent request with the same Idempotency-Key won
        return _accepted(_written(svc, sid), replayed=True)
    except BaseException:
        created.made = _manifest_stored(svc, sid)  # a half-made one is audited by the reconciler
        raise
    created.made = True
    if public:
        svc.repo.make_public(sid)
    svc.metrics.submissions.labels("accepted").inc()
    # Stored is accepted: the reconciler enqueues it once Redis is back.
    with tolerated(log, "submission %s stored but not enqueued (%s)", sid):
        svc.active.commit(token.token_id, slot, sid)
        jobs.enqueue_audit_of(svc.redis, sid, manifest.kind,
                              program=manifest.selector_backend is not None)
    return _accepted(sid)


def _manifest_stored(svc: Services, sid: str) -> bool:
    """Whether `sid`'s manifest reached the store (False when the store cannot tell: a
    failure of the service is not charged to the submitter)."""
    try:
        return svc.repo.exists(sid)
    except (StoreError, OSError):
        return False


def _written(svc: Services, sid: str) -> str:
    """`sid` once its creation is complete: a request repeating an Idempotency-Key can find
    the submission of the concurrent request holding the key after its manifest is written
    and before its status is; it waits (briefly) for the status rather than answer 404.

    Polling is the tool here: the store (a directory or S3) tells nobody of a write, and
    the gap waited out is the other request's next write, usually milliseconds away. So the
    first looks come fast and then back off (`IDEMPOTENT_POLL_FIRST_S`, doubling up to
    `IDEMPOTENT_POLL_MAX_S`): a few store reads in all, and the web worker is held at most
    `IDEMPOTENT_WAIT_S` (then 503 with Retry-After, and the client's retry finds it).
    """
    deadline = time.monotonic() + defaults.IDEMPOTENT_WAIT_S
    pause = defaults.IDEMPOTENT_POLL_FIRST_S
    while not svc.store.exists(svc.repo.status_key(sid)):
        left = deadline - time.monotonic()
        if left <= 0:
            raise ServiceUnavailable("the submission for this Idempotency-Key is still being "
                                     "created; retry shortly", field="Idempotency-Key",
                                     extra={"retry_after": 1})
        time.sleep(min(pause, left))
        pause = min(2 * pause, defaults.IDEMPOTENT_POLL_MAX_S)
    return sid


_SUBMISSION_ID = re.compile(r"sub-[0-9]{14}-[0-9a-f]{12}")


def _visible(svc: Services, sid: str) -> tuple[Manifest, bool]:
    """The manifest and public flag of a submission the caller may see (owner, admin, or
    anyone once public); 404 otherwise, so private submissions do not leak their existence."""
    if not _SUBMISSION_ID.fullmatch(sid):
        raise NotFound(f"no submission '{sid}'", field="submission_id")
    try:
        manifest = svc.repo.manifest(sid)
    except ObjectNotFound:
        raise NotFound(f"no submission '{sid}'", field="submission_id") from None
    public = svc.repo.is_public(sid)
    if not public and not _owns(current_token(required=False), manifest):
        raise NotFound(f"no submission '{sid}'", field="submission_id")
    return manifest, public


def _owns(token, manifest: Manifest) -> bool:
    """Whether `token` (None: anonymous) may act on the submission: its owner or an admin."""
    return token is not None and (token.admin or manifest.owner == token.token_id)


def _owned(svc: Services, sid: str, missing: str) -> Manifest:
    """The manifest of a submission the caller owns (or administers); 404 `missing` otherwise,
    also for a public submission of someone else."""
    token = current_token(required=True)  # 401 before anything about the submission
    manifest, _public = _visible(svc, sid)
    if not _owns(token, manifest):
        raise NotFound(missing, field="submission_id")
    return manifest


def _status_document(svc: Services, sid: str, manifest: Manifest | None = None,
                     public: bool | None = None) -> dict:
    manifest = manifest or svc.repo.manifest(sid)
    public = svc.repo.is_public(sid) if public is None else public
    status = svc.repo.status(sid)
    base = f"{request.script_root}{defaults.API_PREFIX}/submissions/{sid}"
    reports = {s: {"json": f"{base}/report?setting={s}", "html": f"{base}/report?setting={s}&format=html"}
               for s in status.reports}
    document = {"id": sid, **status.to_dict(), "name": svc.repo.display_name(sid, manifest),
                "settings": list(manifest.settings), "created_at": manifest.created_at,
                "public": public, "selection_only": manifest.selection_only,
                "report_urls": reports, "status_url": base, "kind": manifest.kind}
    if manifest.selector_backend is not None:  # a selector, or a readout setting's program
        document["selector"] = _selector_summary(svc, sid, manifest, base)
    return document


_RUN_SUMMARY_FIELDS = ("status", "reason", "exit_code", "wall_seconds", "image_digest")


def _selector_summary(svc: Services, sid: str, manifest: Manifest, base: str) -> dict:
    """What ran and how it ended; the log tails are at `run_url`, for the owner only."""
    run = svc.repo.selector_run(sid)
    summary = {"backend": manifest.selector_backend, "image": manifest.selector_image,
               "archive_sha256": manifest.input_sha256 if manifest.selector_backend == "local"
               else None, "run_url": f"{base}/run", "run": None}
    if run is not None:
        summary["run"] = {k: run.get(k) for k in _RUN_SUMMARY_FIELDS}
    return summary


@api.get("/submissions/<submission_id>")
def get_submission(submission_id: str):
    svc = services()
    manifest, public = _visible(svc, submission_id)
    memory: FinalDocuments = current_app.extensions[_FINAL_DOCUMENTS]
    key = (submission_id, request.script_root, public)
    body = memory.get(key)
    if body is None:
        document = _status_document(svc, submission_id, manifest, public)
        response = jsonify(document)
        if State(document["state"]).is_final:
            memory.put(key, response.get_data())
        return response
    return Response(body, mimetype="application/json")


@api.get("/submissions/<submission_id>/run")
def get_selector_run(submission_id: str):
    """A container submission's run with its stdout and stderr tails: owner (or admin) only."""
    svc = services()
    manifest = _owned(svc, submission_id, f"no selector run of submission '{submission_id}' for this token")
    if manifest.selector_backend is None:
        raise NotFound(f"submission '{submission_id}' is a file upload; it ran no selector",
                       field="submission_id")
    run = svc.repo.selector_run(submission_id)
    if run is None:
        state = svc.repo.status(submission_id).state.value
        raise Conflict(f"the selector of '{submission_id}' has not run yet (state {state})",
                       field="submission_id", code="not_ready")
    return jsonify(run)


@api.get("/submissions")
def list_submissions():
    svc = services()
    token = current_token(required=True)
    try:
        limit = int(request.args.get("limit", "100"))
    except ValueError:
        raise ValidationFailed(f"limit must be an integer, got '{request.args['limit']}'",
                               field="limit") from None
    if not 1 <= limit <= 1000:
        raise ValidationFailed(f"limit must be between 1 and 1000, got {limit}", field="limit")
    ids = sorted(svc.repo.owned_by(token.token_id), reverse=True)[:limit]
    return jsonify({"submissions": [_status_document(svc, sid) for sid in ids]})


@api.get("/submissions/<submission_id>/report")
def get_report(submission_id: str):
    svc = services()
    manifest, _public = _visible(svc, submission_id)
    status = svc.repo.status(submission_id)
    setting = request.args.get("setting")
    if setting is None:
        if len(manifest.settings) != 1:
            raise ValidationFailed(f"this submission covers {list(manifest.settings)}; name one "
                                   "with ?setting=", field="setting")
        setting = manifest.settings[0]
    if setting not in manifest.settings:
        raise NotFound(f"submission '{submission_id}' has no setting '{setting}'", field="setting")
    fmt = request.args.get("format", "json")
    if fmt not in ("json", "html"):
        raise ValidationFailed(f"format must be 'json' or 'html', got '{fmt}'", field="format")
    if setting not in status.reports:
        raise Conflict(f"the report for '{setting}' is not written yet (state {status.state.value})",
                       field="setting", code="not_ready")
    if fmt == "html":
        return Response(svc.repo.report_html(submission_id, setting), mimetype="text/html")
    return Response(svc.store.get_bytes(svc.repo.report_key(submission_id, setting)),
                    mimetype="application/json")


@api.post("/submissions/<submission_id>/publish")
def publish_submission(submission_id: str):
    svc = services()
    _owned(svc, submission_id, f"no submission '{submission_id}'")
    status = svc.repo.status(submission_id)
    if status.state is State.FAILED:
        raise Conflict("a failed submission cannot be made public", field="submission_id")
    svc.repo.make_public(submission_id)
    if status.state is State.PUBLISHED:
        _rebuild_board(svc)
    return jsonify(_status_document(svc, submission_id))


def _rebuild_board(svc: Services) -> None:
    """Owe a leaderboard rebuild and enqueue it (the reconciler does if Redis is down)."""
    svc.store.put_bytes(DIRTY_KEY, b"")
    with tolerated(log, "leaderboard rebuild not enqueued (%s); the reconciler will"):
        jobs.enqueue_publish(svc.redis, None)


def _listed(svc: Services, sid: str, action: str) -> None:
    """Let the caller change how `sid` is listed: its owner or the admin. Someone else gets
    404 where the submission is private to them (it does not exist for them) and 403 where
    it is public (they can see it, not change it)."""
    token = current_token(required=True)  # 401 before anything about the submission
    manifest, _public = _visible(svc, sid)
    if not _owns(token, manifest):
        raise Forbidden(f"only the owner of submission '{sid}' or the admin may {action} it",
                        field="submission_id")


def _relisted(svc: Services, sid: str, was_public: bool) -> Response:
    """The status after a withdrawal or rename, the board rebuilt where it showed the rows."""
    current_app.extensions[_FINAL_DOCUMENTS].forget(sid)
    if was_public and svc.repo.status(sid).state is State.PUBLISHED:
        _rebuild_board(svc)
    return jsonify(_status_document(svc, sid))


@api.post("/submissions/<submission_id>/withdraw")
def withdraw_submission(submission_id: str):
    """Take a submission off the public leaderboard (private again; it can be published
    again): its owner, or the admin removing any."""
    svc = services()
    _listed(svc, submission_id, "withdraw")
    was_public = svc.repo.is_public(submission_id)
    svc.repo.withdraw(submission_id)
    return _relisted(svc, submission_id, was_public)


@api.post("/submissions/<submission_id>/rename")
def rename_submission(submission_id: str):
    """Give a submission a new display name: JSON `{"name": ...}` or a form field `name`."""
    svc = services()
    _listed(svc, submission_id, "rename")
    body = request.get_json(silent=True) if request.is_json else request.form
    name = body.get("name") if body is not None and hasattr(body, "get") else None
    if not isinstance(name, str) or not name:
        raise ValidationFailed('rename needs the new display name: JSON {"name": ...} or a '
                               "form field 'name'", field="name")
    svc.repo.rename(submission_id, _display_name({"name": name}, ""))
    return _relisted(svc, submission_id, svc.repo.is_public(submission_id))
