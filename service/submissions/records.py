"""Submission records in the object store: the system of record.

Layout (keys under the store root)::

    inputs/sha256/<hex>                       the uploaded file, immutable, content-addressed
    submissions/<id>/manifest.json            who, what, when; immutable (put_if_absent)
    submissions/<id>/status.json              state, progress, reason, fault; rewritten
    submissions/<id>/public                   present while the owner has it public
    submissions/<id>/name                     its display name once renamed (the manifest keeps the first)
    submissions/<id>/reports/<setting>.json   the audit report (AuditReport.to_dict())
    submissions/<id>/reports/<setting>.html   the same report as a self-contained page
    submissions/<id>/selector/run.json        a container submission's run (logs: owner only)
    submissions/<id>/selector/scores          its validated scores (`encode_scores`), once it ran
    submissions/<id>/selector/provenance.json what ran, for the report (written after the scores)
    open/<id>                                 present while the submission is not final
    owners/<owner>/<id>                       index of an owner's submissions
    idempotency/<owner>/<sha256(key)>.json    Idempotency-Key -> submission id

Redis holds none of this; losing Redis loses queues and caches only, and the
reconciler rebuilds them from `open/`.
"""

from __future__ import annotations

import json
import secrets
import time
from collections import OrderedDict
from dataclasses import asdict, dataclass, field, replace
from datetime import datetime, timezone
from enum import Enum

from expaudit.errors import InternalError
from service.store import ObjectNotFound, ObjectStore


class SubmissionExists(InternalError, FileExistsError):
    """A submission id that is already recorded (a concurrent create with the same id won)."""


class State(str, Enum):
    """Life cycle of a submission: queued -> running -> scoring -> published | failed."""

    QUEUED = "queued"
    """Stored and waiting for a worker."""
    RUNNING = "running"
    """A worker is reading and validating the input."""
    SCORING = "scoring"
    """The audit is being computed (or its reports wait for the leaderboard rebuild)."""
    PUBLISHED = "published"
    """Reports written and the leaderboard rebuilt (the row shows once public)."""
    FAILED = "failed"
    """Gave up; `reason` says why and `fault` whose fault it was."""

    @property
    def is_final(self) -> bool:
        return self in (State.PUBLISHED, State.FAILED)


class Fault(str, Enum):
    """Whose fault a failure is: only infrastructure failures are retried."""

    SUBMITTER = "submitter"
    INFRASTRUCTURE = "infrastructure"


def utc_now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def new_submission_id() -> str:
    """Sortable by creation time, unguessable, and safe as a file name and URL part."""
    stamp = datetime.now(timezone.utc).strftime("%Y%m%d%H%M%S")
    return f"sub-{stamp}-{secrets.token_hex(6)}"


READOUT_KINDS = ("features", "predictions")
"""Manifest kinds of a readout submission (docs/readout.md, "Submissions over HTTP")."""


@dataclass(frozen=True)
class Manifest:
    """What was submitted; written once and never changed.

    Attributes:
        submission_id: the public id.
        owner: id of the token that submitted (never the token itself).
        owner_name: the token's name, shown on the leaderboard.
        name: the display name of the selector.
        settings: setting ids the upload covers, sorted.
        input_key: object key of the uploaded bytes (content-addressed).
        input_sha256: their SHA-256.
        input_format: "csv", "parquet" or "json".
        filename: the uploaded file's name (used in error messages).
        selection_only: the scores only name one pick per scene.
        created_at: ISO 8601 UTC.
        kind: "scores" (an uploaded scores file), "container" (a selector the
            service runs; `input_key` is then its archive, or empty for an image),
            or "features" / "predictions" (a readout upload, `READOUT_KINDS`; "features"
            also for a program on a readout setting, which has a `selector_backend`).
        selector_backend: "local" or "docker" for a container submission or a readout
            setting's program; None for a file upload.
        selector_image: the image reference pinned by digest (Docker backend).
        token_owner: the owner the operator named for the token (`TokenInfo.owner`);
            None in manifests written before tokens had owners.
        scores_key: object key of the upload's validated table (scores:
            `leaderboard.scores.encode_scores`; a readout upload:
            `leaderboard.readout.upload.encode_upload`), which the audit reads instead
            of parsing the upload again; None for a container submission and in
            manifests written before it was stored.
        sealed_claim: store key of the sealed quota claim the submission was counted
            under (`service.sealed.quota`), None when it was not counted: a container
            submission whose selector fails gives it back (docs/sealed.md).
    """

    submission_id: str
    owner: str
    owner_name: str
    name: str
    settings: tuple[str, ...]
    input_key: str
    input_sha256: str
    input_format: str
    filename: str
    selection_only: bool
    created_at: str
    kind: str = "scores"
    selector_backend: str | None = None
    selector_image: str | None = None
    token_owner: str | None = None
    scores_key: str | None = None
    sealed_claim: str | None = None

    @property
    def sealed_owner(self) -> str:
        """Whose Ladder the submission's sealed reports go through: the token's owner (the
        token id for a manifest from before owners, which is where its Ladder was kept)."""
        return self.token_owner or self.owner

    def to_dict(self) -> dict:
        out = asdict(self)
        out["settings"] = list(self.settings)
        return out

    @classmethod
    def from_dict(cls, data: dict) -> "Manifest":
        return cls(**{**data, "settings": tuple(data["settings"])})


@dataclass(frozen=True)
class Status:
    """Where a submission is; rewritten by the web process (creation) and the jobs.

    Attributes:
        state: the `State`.
        progress: 0..1, monotone while the submission is processed.
        reason: why it failed (or the last retried infrastructure problem).
        fault: `Fault` of a failure, else None.
        attempts: how many job executions started (a failed or retried submission keeps
            the count, progress and reports its last execution wrote:
            `service.queues.jobs._latest`).
        reports: setting ids whose report is written.
        updated_at: ISO 8601 UTC of this record.
        rollouts: `{"done", "total"}` cells of the matrix while the audit waits
            for (or has waited for) runners to compute missing cells; else None.
    """

    state: State
    progress: float = 0.0
    reason: str | None = None
    fault: Fault | None = None
    attempts: int = 0
    reports: tuple[str, ...] = field(default_factory=tuple)
    updated_at: str = field(default_factory=utc_now)
    rollouts: dict | None = None

    def to_dict(self) -> dict:
        return {"state": self.state.value, "progress": round(float(self.progress), 4),
                "reason": self.reason, "fault": None if self.fault is None else self.fault.value,
                "attempts": self.attempts, "reports": list(self.reports),
                "updated_at": self.updated_at, "rollouts": self.rollouts}

    @classmethod
    def from_dict(cls, data: dict) -> "Status":
        return cls(state=State(data["state"]), progress=float(data.get("progress", 0.0)),
                   reason=data.get("reason"),
                   fault=None if data.get("fault") is None else Fault(data["fault"]),
                   attempts=int(data.get("attempts", 0)), reports=tuple(data.get("reports", ())),
                   updated_at=data.get("updated_at") or utc_now(),
                   rollouts=data.get("rollouts"))

    def advance(self, **changes) -> "Status":
        return replace(self, updated_at=utc_now(), **changes)


def _dump(document: dict) -> bytes:
    return json.dumps(document, sort_keys=True, indent=1).encode("utf-8")


PUBLIC_MEMORY_S = 5.0
"""How long a web process trusts that a submission it saw public still is: an owner can
withdraw it, and every web process stops showing it within this time (the one that
answered the withdrawal at once)."""


class RecordCache:
    """Per-process memory of records read from the store.

    Manifests are immutable, so they are remembered for good; that a submission
    is public is remembered for `PUBLIC_MEMORY_S` (its owner may withdraw it).
    This spares the status endpoint two of its three store reads. Bounded (least
    recently used out).
    """

    def __init__(self, max_items: int = 10_000) -> None:
        self.max_items = max_items
        self.manifests: OrderedDict[str, Manifest] = OrderedDict()
        self.public: dict[str, float] = {}
        """Submission id -> when it was last seen public (`time.monotonic`)."""

    def remember(self, manifest: Manifest) -> None:
        self.manifests[manifest.submission_id] = manifest
        self.manifests.move_to_end(manifest.submission_id)
        while len(self.manifests) > self.max_items:
            self.manifests.popitem(last=False)

    def mark_public(self, sid: str) -> None:
        if len(self.public) >= self.max_items:
            self.public.clear()
        self.public[sid] = time.monotonic()

    def seen_public(self, sid: str) -> bool:
        """Whether `sid` was seen public less than `PUBLIC_MEMORY_S` ago."""
        seen = self.public.get(sid)
        return seen is not None and time.monotonic() - seen < PUBLIC_MEMORY_S


class SubmissionRepo:
    """Read and write submission records in an `ObjectStore`.

    Args:
        cache: an optional `RecordCache` shared by the requests of one process.
    """

    def __init__(self, store: ObjectStore, cache: RecordCache | None = None) -> None:
        self.store = store
        self.cache = cache

    # ---------------------------------------------------------------- keys
    @staticmethod
    def manifest_key(sid: str) -> str:
        return f"submissions/{sid}/manifest.json"

    @staticmethod
    def status_key(sid: str) -> str:
        return f"submissions/{sid}/status.json"

    @staticmethod
    def public_key(sid: str) -> str:
        return f"submissions/{sid}/public"

    @staticmethod
    def report_key(sid: str, setting_id: str, ext: str = "json") -> str:
        return f"submissions/{sid}/reports/{setting_id}.{ext}"

    # ------------------------------------------------------------- writing
    def create(self, manifest: Manifest) -> Status:
        """Record a new submission (manifest, queued status, indexes)."""
        sid = manifest.submission_id
        # The open marker goes first: whatever a crash leaves behind, the
        # reconciler finds it (and finishes or discards the half-made record).
        self.store.put_bytes(f"open/{sid}", b"")
        if not self.store.put_if_absent(self.manifest_key(sid), _dump(manifest.to_dict()),
                                        "application/json"):
            raise SubmissionExists(f"submission {sid} already exists")
        status = Status(state=State.QUEUED)
        self.write_status(sid, status)
        self.store.put_bytes(f"owners/{manifest.owner}/{sid}", b"")
        return status

    def write_status(self, sid: str, status: Status) -> None:
        self.store.put_bytes(self.status_key(sid), _dump(status.to_dict()), "application/json")
        if status.state.is_final:
            self.store.delete(f"open/{sid}")
        else:
            self.store.put_bytes(f"open/{sid}", b"")

    def make_public(self, sid: str) -> None:
        self.store.put_bytes(self.public_key(sid), b"")

    def withdraw(self, sid: str) -> None:
        """Make a public submission private again (its rows leave the next rebuild)."""
        self.store.delete(self.public_key(sid))
        if self.cache is not None:
            self.cache.public.pop(sid, None)

    @staticmethod
    def name_key(sid: str) -> str:
        return f"submissions/{sid}/name"

    def rename(self, sid: str, name: str) -> None:
        """Give the submission a new display name (the manifest keeps the one it was made with)."""
        self.store.put_bytes(self.name_key(sid), name.encode("utf-8"), "text/plain; charset=utf-8")

    def display_name(self, sid: str, manifest: Manifest | None = None) -> str:
        """The submission's current display name: the last rename, else the manifest's."""
        try:
            return self.store.get_bytes(self.name_key(sid)).decode("utf-8")
        except ObjectNotFound:
            return (manifest or self.manifest(sid)).name

    @staticmethod
    def selector_run_key(sid: str) -> str:
        return f"submissions/{sid}/selector/run.json"

    def write_selector_run(self, sid: str, record: dict) -> None:
        """How a container submission's selector run ended, with its log tails (owner only)."""
        self.store.put_bytes(self.selector_run_key(sid), _dump(record), "application/json")

    def selector_run(self, sid: str) -> dict | None:
        try:
            return json.loads(self.store.get_bytes(self.selector_run_key(sid)))
        except ObjectNotFound:
            return None

    def write_selector_scores(self, sid: str, scores: bytes, provenance: dict) -> None:
        """Keep what a container submission's selector produced, so that an audit continued
        after its rollouts (or retried) reads it instead of running the selector again."""
        self.store.put_bytes(f"submissions/{sid}/selector/scores", scores)
        self.store.put_bytes(f"submissions/{sid}/selector/provenance.json", _dump(provenance),
                             "application/json")  # last: its presence means both are there

    def selector_scores(self, sid: str) -> tuple[bytes, dict] | None:
        """The stored scores and provenance of a selector that ran, or None."""
        try:
            provenance = json.loads(self.store.get_bytes(f"submissions/{sid}/selector/provenance.json"))
        except ObjectNotFound:
            return None
        return self.store.get_bytes(f"submissions/{sid}/selector/scores"), provenance

    def write_report(self, sid: str, setting_id: str, report: dict, html: str) -> None:
        self.store.put_bytes(self.report_key(sid, setting_id), _dump(report), "application/json")
        self.store.put_bytes(self.report_key(sid, setting_id, "html"), html.encode("utf-8"),
                             "text/html; charset=utf-8")

    # ------------------------------------------------------------- reading
    def manifest(self, sid: str) -> Manifest:
        if self.cache is not None and sid in self.cache.manifests:
            return self.cache.manifests[sid]
        manifest = Manifest.from_dict(json.loads(self.store.get_bytes(self.manifest_key(sid))))
        if self.cache is not None:
            self.cache.remember(manifest)
        return manifest

    def status(self, sid: str) -> Status:
        return Status.from_dict(json.loads(self.store.get_bytes(self.status_key(sid))))

    def exists(self, sid: str) -> bool:
        return self.store.exists(self.manifest_key(sid))

    def is_public(self, sid: str) -> bool:
        if self.cache is not None and self.cache.seen_public(sid):
            return True
        public = self.store.exists(self.public_key(sid))
        if public and self.cache is not None:
            self.cache.mark_public(sid)
        return public

    def report(self, sid: str, setting_id: str) -> dict:
        return json.loads(self.store.get_bytes(self.report_key(sid, setting_id)))

    def report_html(self, sid: str, setting_id: str) -> bytes:
        return self.store.get_bytes(self.report_key(sid, setting_id, "html"))

    def owned_by(self, owner: str) -> list[str]:
        prefix = f"owners/{owner}/"
        return [key[len(prefix):] for key in self.store.list_keys(prefix)]

    def open_ids(self) -> list[str]:
        return [key[len("open/"):] for key in self.store.list_keys("open/")]

    def public_ids(self) -> list[str]:
        return sorted({key.split("/")[1] for key in self.store.list_keys("submissions/")
                       if key.endswith("/public")})

    # ------------------------------------------------------- idempotency
    def idempotency_key(self, owner: str, key_hash: str) -> str:
        return f"idempotency/{owner}/{key_hash}.json"

    def remember_idempotency(self, owner: str, key_hash: str, sid: str, body_sha256: str) -> bool:
        """Bind an Idempotency-Key to a submission; False if it was bound before."""
        document = {"submission_id": sid, "body_sha256": body_sha256, "created_at": utc_now()}
        return self.store.put_if_absent(self.idempotency_key(owner, key_hash), _dump(document),
                                        "application/json")

    def recall_idempotency(self, owner: str, key_hash: str) -> dict | None:
        try:
            return json.loads(self.store.get_bytes(self.idempotency_key(owner, key_hash)))
        except ObjectNotFound:
            return None
