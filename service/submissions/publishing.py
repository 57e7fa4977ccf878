"""Rebuild the static leaderboard from the reports in the object store.

The rebuild reads every public submission's reports and the reference rules'
reports, renders the site with `leaderboard.site.build.build_leaderboard` (a pure
function) and writes the files under ``leaderboard/`` in the store, from where
they are served as they are.

Reference rules (`leaderboard.rules.baselines.BASELINE_RULES`) are published on
every complete public setting, never on a sealed one (docs/sealed.md). Each
computed rule's report is cached under
``baselines/<setting>/<data fingerprint>-<counts>/<rule>.json`` because it
depends only on the frozen data; a rule not computed (weights missing, ...)
is not cached, so it is tried again at the next rebuild and appears once its
weights are supplied. The structural and embedding rules need the frozen
scenes, so they are listed on the benchmark's own settings
(`BenchmarkCatalog`) and not on a catalog of plain score tables. Image
embeddings are cached by model and image content hash in the embedding
cache directory (`embedding_cache_dir`), so the first rebuild pays for them
once and a rebuild after new cells land reads them back.

Readout settings (`service.catalog.readout`) are published beside them: every public
readout submission's served report (the confirm summary, nothing per initialization) and
the representations of each bank's reference report, on the readout pages
(`leaderboard.site.readout_pages`, docs/readout.md, "The leaderboard").
"""

from __future__ import annotations

import hashlib
import json
import logging
import mimetypes
import time
from dataclasses import dataclass
from pathlib import Path

from benchmark_data.registry import get_setting
from leaderboard.metrics.discrimination import quality_range
from leaderboard.rules.baselines import (BASELINE_RULES, DISPLAY_NAMES, OUTCOME_RULES, SCENE_RULES,
                                         NotComputedRule, audit_outcome_rules, audit_scene_rules,
                                         baseline_submission_id, scene_rule_scores)
from leaderboard.site.build import build_leaderboard
from leaderboard.site.documents import read_documents
from leaderboard.site.entries import LeaderboardEntry, SettingInfo
from leaderboard.site.readout_entries import (ReadoutDownloadLink, ReadoutEntry,
                                              ReadoutSettingInfo)
from leaderboard.site.sealed_html import is_sealed_report
from service.catalog import (BenchmarkCatalog, Catalog, DataUnavailable, ReadoutCatalog, fingerprint,
                             offered_downloads, open_readout_catalog)
from service.process import from_env
from service.submissions.site_assets import setting_thumbnails
from service.submissions.records import READOUT_KINDS, State, SubmissionRepo
from service.store import LocalStore, ObjectNotFound, ObjectStore

log = logging.getLogger(__name__)

READOUT_SUBMISSION_SCHEMA = "expaudit-readout-submission/1"
"""The schema of a readout submission's served report (`service.sealed.readout_report`): the
only readout report the site publishes."""

REFERENCE_REPORT = "reports/reference-confirm.json"
"""A readout bank's reference report (its representations' confirm summaries), in the bank."""

LEADERBOARD_PREFIX = "leaderboard/"
"""Key prefix of the published site in the object store."""

PUBLISHED_MANIFEST_KEY = "state/leaderboard-published.json"
"""SHA-256 of every file of the published site: a rebuild writes only the files
that changed, so publishing one submission does not rewrite every report."""

DIRTY_KEY = "state/leaderboard-dirty"
"""Present while a rebuild is owed (an owner made a submission public); the
reconciler enqueues a rebuild when it finds it."""

LOCAL_EMBEDDING_CACHE = "cache/embeddings"
"""Embedding cache directory inside a local store's root (when none is configured)."""


@dataclass(frozen=True)
class AuditOptions:
    """Resampling counts passed to every audit (None: the engine's defaults), and where
    the reference rules' embeddings and encoder weights live.

    Attributes:
        embedding_cache: directory of cached image embeddings; None uses
            `LOCAL_EMBEDDING_CACHE` inside a local store and no cache with
            an S3 store (see `embedding_cache_dir`).
        weights: (rule, weights file) pairs for the encoders that read
            user-supplied weights (resnet18, dinov2, clip); rules not named
            here read their environment variable
            (`leaderboard.rules.embeddings.WEIGHTS_ENV`).
    """

    n_shuffles: int | None = None
    n_bootstrap: int | None = None
    embedding_cache: str | None = None
    weights: tuple[tuple[str, str], ...] = ()

    def kwargs(self) -> dict:
        out = {}
        if self.n_shuffles is not None:
            out["n_shuffles"] = self.n_shuffles
        if self.n_bootstrap is not None:
            out["n_bootstrap"] = self.n_bootstrap
        return out


def entry_id(submission_id: str, setting_id: str) -> str:
    """The row id of one setting of a submission (unique across the site)."""
    return f"{submission_id}.{setting_id}"


def content_type(key: str) -> str:
    guessed, _ = mimetypes.guess_type(key)
    if guessed in ("text/html", "application/json", "text/css", "text/csv"):
        return f"{guessed}; charset=utf-8" if guessed.startswith("text/") else guessed
    return guessed or "application/octet-stream"


def sealed_setting_ids(catalog: Catalog) -> frozenset[str]:
    """The ids of the catalog's sealed settings."""
    return frozenset(s.id for s in catalog.list_settings() if s.sealed)


def _ready_public(repo: SubmissionRepo, include: str | None, *, readout: bool):
    """(id, manifest) of each public submission of the track (`readout` or retrieval) whose
    reports are all written: published, or `include` while it is being scored."""
    for sid in repo.public_ids():
        try:
            manifest, status = repo.manifest(sid), repo.status(sid)
        except ObjectNotFound:
            continue
        if (manifest.kind in READOUT_KINDS) is not readout:
            continue
        ready = status.state is State.PUBLISHED or (sid == include and status.state is State.SCORING)
        if ready and set(status.reports).issuperset(manifest.settings):
            yield sid, manifest


def submission_entries(repo: SubmissionRepo, include: str | None = None,
                       sealed: frozenset[str] = frozenset()) -> list:
    """Rows of every public submission whose reports are all written and that did not fail.

    On the `sealed` settings only sealed reports are published: a full audit
    report stored there (written before the setting was sealed, or before
    sealed reports existed) would publish its outcomes.
    """
    entries = []
    for sid, manifest in _ready_public(repo, include, readout=False):
        name = repo.display_name(sid, manifest)  # the owner may have renamed it
        for setting_id in manifest.settings:
            report = repo.report(sid, setting_id)
            if setting_id in sealed and not is_sealed_report(report):
                log.warning("full report of %s on sealed %s not published", sid, setting_id)
                continue
            entries.append(LeaderboardEntry(
                submission_id=entry_id(sid, setting_id), setting_id=setting_id,
                display_name=name, kind="submission",
                submitted_at=manifest.created_at, report=report,
                submitter=manifest.owner_name, submitter_id=manifest.sealed_owner))
    return entries


def readout_submission_entries(repo: SubmissionRepo, include: str | None = None,
                               settings: frozenset[str] = frozenset()) -> list[ReadoutEntry]:
    """Rows of every public readout submission whose report is written and that did not fail,
    on one of the readout `settings` served here. The report is the served one
    (`service.sealed.readout_report`: the confirm summary, nothing per initialization); one
    that is not (a report of another schema) is never published."""
    entries = []
    for sid, manifest in _ready_public(repo, include, readout=True):
        for setting_id in manifest.settings:
            if setting_id not in settings:
                continue
            report = repo.report(sid, setting_id)
            if report.get("schema_version") != READOUT_SUBMISSION_SCHEMA:
                log.warning("readout report of %s on %s is not a served report: not published", sid, setting_id)
                continue
            entries.append(ReadoutEntry(
                row_id=entry_id(sid, setting_id), setting_id=setting_id,
                display_name=repo.display_name(sid, manifest), kind="submission", report=report,
                submitted_at=manifest.created_at, submitter=manifest.owner_name))
    return entries


def _reference_report(path: Path) -> dict | None:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None


def readout_setting_infos(readout: ReadoutCatalog) -> list[ReadoutSettingInfo]:
    """What the readout pages say of each readout setting served here: the bank's facts,
    whether it takes submissions, its downloads and its reference report (summaries only)."""
    infos = []
    for setting in readout.list_settings():
        info = setting.info()
        try:
            readout.check_sealed(setting.id)
            available, reason = True, None
        except DataUnavailable as exc:
            available, reason = False, str(exc)
        downloads = tuple(ReadoutDownloadLink(d.key, d.file_name(setting.id), d.holds,
                                              f"settings/{setting.id}/{d.route}")
                          for d in readout.downloads(setting.id))
        infos.append(ReadoutSettingInfo(
            setting_id=setting.id, task=setting.task, version=setting.version,
            coordinate=str(info.get("coordinate") or ""), unit=str(info.get("unit") or ""),
            initializations=dict(info.get("initializations") or {}),
            observations=dict(info.get("counts") or {}), accepts_submissions=available,
            unavailable_reason=reason, downloads=downloads,
            reference=_reference_report(setting.bank / REFERENCE_REPORT)))
    return infos


def embedding_cache_dir(store: ObjectStore, options: AuditOptions) -> Path | None:
    """Where image embeddings are cached: the configured directory, else inside a local
    store's root, else nowhere (an S3 store: embeddings are recomputed whenever a
    setting's baseline reports are, i.e. when its data changes)."""
    if options.embedding_cache:
        return Path(options.embedding_cache)
    if isinstance(store, LocalStore):
        return store.root.joinpath(*LOCAL_EMBEDDING_CACHE.split("/"))
    return None


def baseline_entries(store: ObjectStore, catalog: Catalog, options: AuditOptions) -> list:
    """Rows of the reference rules on every complete public setting (reports cached in the
    store); none on a sealed setting, whose outcomes they would publish."""
    entries = []
    for setting in catalog.list_settings():
        if setting.sealed or not catalog.completeness(setting.id).complete:
            continue  # a sealed setting's reference rows would publish its outcomes
        started = time.perf_counter()
        reports = baseline_reports(store, catalog, setting.id, options)
        log.info("baselines of %s: %d rules in %.1f s", setting.id, len(reports),
                 time.perf_counter() - started)
        for rule, report in reports.items():
            missing = isinstance(report, NotComputedRule)
            entries.append(LeaderboardEntry(
                submission_id=baseline_submission_id(setting.id, rule), setting_id=setting.id,
                display_name=DISPLAY_NAMES[rule], kind="baseline", submitted_at="",
                report={} if missing else report,
                not_computed=report.reason if missing else None))
    return entries


def _cached(store: ObjectStore, key: str) -> dict | None:
    try:
        return json.loads(store.get_bytes(key))
    except ObjectNotFound:
        return None


def _store_reports(store: ObjectStore, prefix: str, reports: dict) -> None:
    for rule, report in reports.items():
        if isinstance(report, dict):
            store.put_bytes(f"{prefix}/{rule}.json", json.dumps(report, sort_keys=True).encode(),
                            "application/json")


def baseline_reports(store: ObjectStore, catalog: Catalog, setting_id: str,
                     options: AuditOptions) -> dict:
    """rule -> report dict or `NotComputedRule` of one complete setting, in table order.

    Computed reports come from the store when cached for this data version
    and these counts; only the missing ones are computed (and then cached).
    """
    data = catalog.load_transfer(setting_id)
    suffix = "-".join(f"{k}{v}" for k, v in sorted(options.kwargs().items())) or "default"
    prefix = f"baselines/{setting_id}/{fingerprint(data)[:24]}-{suffix}"
    has_scenes = isinstance(catalog, BenchmarkCatalog)
    rules = BASELINE_RULES if has_scenes else OUTCOME_RULES
    reports = {rule: _cached(store, f"{prefix}/{rule}.json") for rule in rules}
    if any(reports[rule] is None for rule in OUTCOME_RULES):
        computed = audit_outcome_rules(data, **options.kwargs())
        _store_reports(store, prefix, computed)
        reports.update(computed)
    todo = [rule for rule in SCENE_RULES if rule in reports and reports[rule] is None]
    if todo:
        scores = scene_rule_scores(get_setting(setting_id), data, catalog.root,
                                   embedding_cache_dir(store, options), todo, dict(options.weights))
        computed = audit_scene_rules(data, scores, **options.kwargs())
        _store_reports(store, prefix, computed)
        reports.update(computed)
    return reports


def setting_infos(catalog: Catalog) -> list:
    """What the site says of each setting besides its rows: completeness, failed policy gates
    and, for a complete published matrix, the experiences' quality range."""
    infos = []
    for s in catalog.list_settings():
        done = catalog.completeness(s.id)
        quality = None
        if not s.sealed and done.cells_total and done.cells_done == done.cells_total:
            quality = quality_range(catalog.load_transfer(s.id).outcomes.astype(float).mean(axis=2))
        infos.append(SettingInfo(s, cells_done=done.cells_done, cells_total=done.cells_total,
                                 policy_gates_failed=catalog.policy_gates_failed(s.id),
                                 quality_range=quality,
                                 downloads=tuple(d.key for d in offered_downloads(catalog, s.id))))
    return infos


def write_site(store: ObjectStore, files: dict[str, bytes]) -> int:
    """Write the changed files of the site, delete vanished ones; returns files written.

    The files go first and the manifest last, so a rebuild that dies half-way
    is completed by the next one.
    """
    try:
        previous = json.loads(store.get_bytes(PUBLISHED_MANIFEST_KEY))
    except ObjectNotFound:
        previous = {}
    digests = {path: hashlib.sha256(data).hexdigest() for path, data in files.items()}
    written = 0
    for path, data in files.items():
        if previous.get(path) != digests[path]:
            store.put_bytes(LEADERBOARD_PREFIX + path, data, content_type(path))
            written += 1
    for path in sorted(set(previous) - set(files)):
        store.delete(LEADERBOARD_PREFIX + path)
    store.put_bytes(PUBLISHED_MANIFEST_KEY, json.dumps(digests, sort_keys=True).encode(),
                    "application/json")
    return written


def rebuild_leaderboard(store: ObjectStore, catalog: Catalog, options: AuditOptions,
                        include: str | None = None, readout: ReadoutCatalog | None = None) -> int:
    """Render the site from the stored reports and write what changed; returns the file count.

    Args:
        include: a submission whose reports are written but whose state is
            still `scoring` (the one this rebuild publishes).
        readout: the readout settings to publish (None: those of the process's
            configuration beside `catalog`, `service.catalog.readout`).
    """
    store.delete(DIRTY_KEY)
    repo = SubmissionRepo(store)
    entries = (submission_entries(repo, include, sealed_setting_ids(catalog))
               + baseline_entries(store, catalog, options))
    readout = readout if readout is not None else open_readout_catalog(from_env(), catalog)
    readout_infos = readout_setting_infos(readout)
    readout_rows = readout_submission_entries(repo, include, frozenset(i.setting_id for i in readout_infos))
    files = build_leaderboard(entries, setting_infos(catalog),
                              thumbnails=setting_thumbnails(catalog), documents=read_documents(),
                              readout_settings=readout_infos, readout_entries=readout_rows)
    written = write_site(store, files)
    log.info("leaderboard rebuilt: %d files (%d changed), %d rows", len(files), written, len(entries))
    return len(files)
