"""A submission's own report page (the API's HTML report) names what the published one names."""

from __future__ import annotations

from service.queues import jobs
from service.submissions.records import SubmissionRepo
from tests.support.servers import run_jobs, scores_csv
from tests.support.submissions import stored_submission


def test_the_private_report_page_has_setting_rule_submitter_date_and_links(store, redis_conn,
                                                                           catalog):
    sid = stored_submission(store, scores_csv(catalog.load_transfer("toy-k4")))
    jobs.enqueue_audit(redis_conn, sid, container=False)
    run_jobs(store, redis_conn, catalog)
    repo = SubmissionRepo(store)
    manifest = repo.manifest(sid)
    page = repo.report_html(sid, "toy-k4").decode()
    assert f"<title>{manifest.name} on toy-k4 · expaudit</title>" in page
    assert f"<dd>{manifest.owner_name}</dd>" in page
    assert f"<dd>{manifest.created_at[:10]}</dd>" in page
    assert 'href="/leaderboard/settings/toy-k4.html"' in page
    assert f'href="/api/v1/submissions/{sid}/report?setting=toy-k4"' in page
    assert 'name="viewport"' in page
