"""The audit of a readout submission: its checked upload, the bank's sealed labels, the report.

The web process stored the upload's checked table (`leaderboard.readout.upload`); this job
decodes it, runs the readout engine on the setting's `confirm` initializations with the
sealed labels of the service's sealed directory (`service.catalog.readout`), and writes the
served report (`service.sealed.readout_report`: the confirm summary, no per-initialization
value) as JSON and as the same HTML page `expaudit readout audit` makes. The engine runs
with the spec's fixed resampling (2000 resamples, seed 0), whatever the retrieval audits
use, so the numbers are those of the reference reports; no failure predictor is fitted
(they are scored on the sealed `eval` labels and not served). It runs inside the audit jobs' one
boundary (`jobs._run_boundary`): an upload the engine refuses fails the submission with
fault "submitter", anything else is retried as an infrastructure failure.

A program submission (a manifest with a `selector_backend`) runs on the selectors queue: its
program runs first (`service.selectors.readout_run`), its checked features are kept with
the submission (a retry reads them instead of running it again) and audited like an
upload. A program that fails gives back the sealed quota it was counted under.
"""

from __future__ import annotations

from dataclasses import replace

from leaderboard.readout.audit import run_readout_audit
from leaderboard.readout.upload import decode_upload, encode_upload
from leaderboard.site.readout_report import render_readout_html
from service.catalog import ReadoutCatalog, open_readout_catalog
from service.process import from_env
from service.queues import jobs
from service.sealed import give_back_claim_key, served_readout_report
from service.selectors import SelectorFailed, run_readout_container
from service.submissions import State, Status

SPLIT = "confirm"
"""The split a readout submission is audited on: the reported numbers (docs/readout.md)."""


def readout_catalog(ctx) -> ReadoutCatalog:
    """The job context's readout settings (`readout`), else those of the process's configuration."""
    catalog = getattr(ctx, "readout", None)
    return catalog if catalog is not None else open_readout_catalog(from_env(), ctx.catalog)


def _audit(ctx, sid: str, status: Status) -> str:
    repo = ctx.repo
    manifest = repo.manifest(sid)
    status = status.advance(state=State.RUNNING, progress=max(status.progress, 0.05),
                            attempts=status.attempts + 1, reason=None, fault=None)
    repo.write_status(sid, status)
    setting_id = manifest.settings[0]
    if setting_id not in status.reports:
        # without outcomes the engine fits no failure predictor: they are scored on the sealed
        # eval labels, never served, and would need rows of dev and eval too
        catalog = readout_catalog(ctx)
        bank = replace(catalog.bank(setting_id), outcomes=None)
        representation, provenance = _representation(ctx, sid, manifest, catalog)
        status = status.advance(state=State.SCORING, progress=0.3)
        repo.write_status(sid, status)
        report = served_readout_report(run_readout_audit(bank, [representation], split=SPLIT), setting_id)
        if provenance is not None:
            report["selector"] = provenance
        repo.write_report(sid, setting_id, report, render_readout_html(report))
        status = status.advance(reports=(setting_id,))
    repo.write_status(sid, status.advance(state=State.SCORING, progress=0.9))
    jobs.enqueue_publish(ctx.redis, sid)
    return f"audit {sid}: readout report written"


def _representation(ctx, sid: str, manifest, catalog: ReadoutCatalog):
    """(the checked features or predictions, the program's provenance or None)."""
    if manifest.selector_backend is None:
        return decode_upload(ctx.store.get_bytes(manifest.scores_key), manifest.name), None
    stored = ctx.repo.selector_scores(sid)
    if stored is not None:
        return decode_upload(stored[0], manifest.name), stored[1]
    try:
        outcome = run_readout_container(ctx, sid, manifest, catalog)
    except SelectorFailed as exc:
        if manifest.sealed_claim is None:
            raise
        give_back_claim_key(ctx.redis, ctx.store, manifest.sealed_claim)
        raise SelectorFailed(f"{exc}; not counted against the day's sealed quota") from None
    ctx.repo.write_selector_scores(sid, encode_upload(outcome.features), outcome.provenance)
    return outcome.features, outcome.provenance


def readout_audit_job(sid: str) -> str:
    """RQ entry point: audit readout submission `sid` and enqueue its publication."""
    return jobs._run_boundary("audit", sid, _audit)
