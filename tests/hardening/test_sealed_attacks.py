"""Attacks on a sealed setting, run as an attacker would, and faults of its quota.

Each test is the attack or fault as it was found: public reference files of a
sealed setting, two crafted files that differ on one scene, scores that tie
everywhere but one scene, a Redis that lost or cannot reach the quota, a
store that fails after the quota was taken.
"""

from __future__ import annotations

import io
import json

import numpy as np
import pandas as pd
import pytest
import redis as redis_lib

from service.sealed.ladder import (grid_size, information_bound_bits, ladder_margin, ladder_release,
                            on_grid)
from service.sealed.quota import QUOTA_KEY
from service.store.storage import LocalStore, ObjectNotFound, StoreUnavailable
from tests.support.servers import ADMIN_TOKEN, RedisServer, bearer, make_app, run_jobs, scores_csv
from tests.support.submissions import submit_scores

SEALED = "toy-sealed"


def _token(client, name: str = "lab-x") -> str:
    response = client.post("/api/v1/tokens", json={"name": name, "owner": name}, headers=bearer(ADMIN_TOKEN))
    assert response.status_code == 201
    return response.json["token"]


def _choice_csv(data, choice: np.ndarray) -> bytes:
    """Scores that pick experience `choice[q]` in scene q (1 for it, 0 for the others)."""
    rows = [{"scene_id": scene, "experience_id": exp, "score": float(choice[q] == i)}
            for q, scene in enumerate(data.scenes.scene_ids)
            for i, exp in enumerate(data.experience_ids)]
    return pd.DataFrame(rows).to_csv(index=False).encode()


def _report(client, token: str, sid: str) -> dict:
    response = client.get(f"/api/v1/submissions/{sid}/report", headers=bearer(token))
    assert response.status_code == 200, response.json
    return response.json


# ------------------------------------------------------------- public files


def _published(store) -> dict[str, bytes]:
    return {key: store.get_bytes(key) for key in store.list_keys("leaderboard/")}


def test_no_public_file_is_computed_from_a_sealed_settings_outcomes(store, redis_conn, catalog):
    """Attack: read the reference rows of a sealed setting off the public leaderboard.

    The oracle row named the best experience of every scene and the
    best-fixed row every experience's success rate."""
    client = make_app(store, redis_conn, catalog).test_client()
    token = _token(client)
    sealed = catalog.load_transfer(SEALED)
    assert submit_scores(client, token, scores_csv(sealed), setting=SEALED,
                         public="true").status_code == 202
    assert submit_scores(client, token, scores_csv(catalog.load_transfer("toy-k4")),
                         setting="toy-k4", public="true").status_code == 202
    run_jobs(store, redis_conn, catalog)
    files = _published(store)
    assert any("baseline-oracle-toy-k4" in key for key in files)  # public settings keep theirs
    assert not [key for key in files if "baseline" in key and SEALED in key]
    for rule in ("oracle", "best-fixed", "random", "track-record"):
        response = client.get(f"/leaderboard/reports/baseline-{rule}-{SEALED}.json")
        assert response.status_code == 404
    y = sealed.success_matrix()
    exact = {round(float(v), 6) for v in (*y.mean(axis=1), y.max(axis=0).mean())}
    exact = {v for v in exact if v != on_grid(v, ladder_margin(y.shape[1]))}
    assert exact, "the toy matrix must have success rates off the Ladder's grid"
    for key, body in files.items():
        if key.endswith(".json"):
            numbers = set(_sealed_numbers(json.loads(body), SEALED in key))
            assert not numbers & exact, f"{key} publishes exact sealed values {numbers & exact}"
        elif SEALED in key:
            text = body.decode("utf-8", "replace")
            assert not [v for v in exact if f"{v:.3f}" in text], f"{key} shows a sealed value"


def _sealed_numbers(document, inside: bool):
    """Every number in the parts of a published JSON document about the sealed setting."""
    if isinstance(document, dict):
        inside = inside or SEALED in document.values()
        for key, value in document.items():
            yield from _sealed_numbers(value, inside or key == SEALED)
    elif isinstance(document, list):
        for value in document:
            yield from _sealed_numbers(value, inside)
    elif inside and isinstance(document, float):
        yield round(document, 6)


# ----------------------------------------------------------- crafted reports


def test_two_files_differing_on_one_scene_reveal_nothing_about_that_scene(store, redis_conn,
                                                                          catalog):
    """Attack: submit a selection, then the same selection changed in one scene q.

    The difference of the two success rates was y[1, q] - y[0, q] / Q exactly,
    so one pair of files gave one scene's two cells. Under the Ladder every
    probe's report must be the same whatever the probed scene holds."""
    client = make_app(store, redis_conn, catalog, sealed_submissions_per_day=50).test_client()
    token = _token(client)
    sealed = catalog.load_transfer(SEALED)
    y = sealed.success_matrix()
    n_scenes = y.shape[1]
    base = np.zeros(n_scenes, dtype=int)
    first = _report(client, token, _submit_and_run(client, token, _choice_csv(sealed, base),
                                                   store, redis_conn, catalog))
    margin = ladder_margin(n_scenes)
    assert first["release"]["margin"] == margin
    assert first["reference"]["success_rule"] == on_grid(y[0].mean(), margin)
    differences, probes = [], []
    for q in range(n_scenes):
        changed = base.copy()
        changed[q] = 1
        sid = _submit_and_run(client, token, _choice_csv(sealed, changed), store, redis_conn,
                              catalog)
        report = _report(client, token, sid)
        report["release"].pop("n_submissions")
        report["release"].pop("information_bound_bits")
        probes.append(json.dumps(report, sort_keys=True))
        differences.append(y[1, q] - y[0, q])
    assert len(set(np.round(differences, 6))) > 1, "the toy matrix must make the attack meaningful"
    assert len(set(probes)) == 1, "a probe's report depends on the probed scene's cells"
    assert json.loads(probes[0])["reference"]["success_rule"] is None


def _submit_and_run(client, token, body, store, redis_conn, catalog) -> str:
    response = submit_scores(client, token, body, setting=SEALED)
    assert response.status_code == 202, response.json
    run_jobs(store, redis_conn, catalog)
    return response.json["id"]


def test_a_sealed_report_holds_the_headline_numbers_and_nothing_else(store, redis_conn,
                                                                     catalog):
    """Attack: scores that tie everywhere but one scene; the within-query AUROC (or any
    per-experience or per-scene value) would reveal that scene's ordering."""
    client = make_app(store, redis_conn, catalog).test_client()
    token = _token(client)
    sealed = catalog.load_transfer(SEALED)
    scores = np.zeros((len(sealed.experience_ids), len(sealed.scenes.scene_ids)))
    scores[:, 3] = [2.0, 1.0, 0.0]
    rows = [{"scene_id": s, "experience_id": e, "score": scores[i, q]}
            for q, s in enumerate(sealed.scenes.scene_ids) for i, e in enumerate(sealed.experience_ids)]
    sid = _submit_and_run(client, token, pd.DataFrame(rows).to_csv(index=False).encode(), store,
                          redis_conn, catalog)
    report = _report(client, token, sid)
    assert set(report) == {"schema_version", "sealed", "inputs", "reference", "release", "verdict"}
    assert set(report["reference"]) == {"success_rule", "success_random", "success_oracle",
                                        "advantage"}
    assert set(report["inputs"]) == {"setting_id", "n_experiences", "n_scenes"}
    margin = report["release"]["margin"]
    for name in ("success_rule", "success_random", "success_oracle"):
        value = report["reference"][name]
        assert value == on_grid(value, margin), f"{name} is not on the margin's grid"
    page = client.get(f"/api/v1/submissions/{sid}/report?format=html", headers=bearer(token))
    text = page.get_data(as_text=True)
    assert page.status_code == 200 and "Sealed audit: toy-sealed" in text
    for experience in sealed.experience_ids:
        assert experience not in text and experience not in json.dumps(report)


def test_a_reexecuted_audit_releases_what_it_released_before(store, redis_conn, catalog):
    """Fault: the worker died after the Ladder moved; the retry must not release again."""
    from service.sealed.report import audit_sealed

    sealed = catalog.load_transfer(SEALED)
    scores = np.random.default_rng(0).normal(size=sealed.outcomes.shape[:2])
    first = audit_sealed(store, redis_conn, "tok-a", SEALED, "sub-1", sealed, scores)
    again = audit_sealed(store, redis_conn, "tok-a", SEALED, "sub-1", sealed, scores)
    assert first == again and first["release"]["new_best"]
    other = audit_sealed(store, redis_conn, "tok-a", SEALED, "sub-2", sealed, scores)
    assert other["reference"]["success_rule"] is None and other["release"]["best"] == \
        first["reference"]["success_rule"]


# ----------------------------------------------------------------- the bound


def test_the_ladder_releases_at_most_the_grid_whatever_is_submitted():
    """Adversarial sequences: released values rise on the grid, so at most G releases."""
    rng = np.random.default_rng(7)
    margin = ladder_margin(200)
    for _ in range(200):
        best, released = None, []
        scores = rng.uniform(size=rng.integers(1, 400))
        if rng.uniform() < 0.5:
            scores = np.sort(scores)  # rising scores release the most
        for score in scores:
            release = ladder_release(best, float(score), margin)
            best = release.best
            if release.new_best:
                released.append(release.value)
        assert len(released) <= grid_size(margin)
        assert all(b - a >= margin - 1e-9 for a, b in zip(released, released[1:]))
        assert all(v == on_grid(v, margin) for v in released)


def test_no_sequence_of_scores_gives_more_transcripts_than_the_bound_allows():
    """Count every transcript (what the reports say) that any 3 submissions can produce on
    a fine grid of true scores: at most 2 ** bound distinct ones, however they are chosen."""
    margin = 0.25
    fine = np.round(np.linspace(0, 1, 41), 6)
    transcripts = set()
    for a in fine:
        first = ladder_release(None, float(a), margin)
        for b in fine:
            second = ladder_release(first.best, float(b), margin)
            for c in fine:
                third = ladder_release(second.best, float(c), margin)
                transcripts.add((first.value, second.value, third.value))
    assert len(transcripts) <= 2 ** information_bound_bits(3, margin)
    assert len(transcripts) > 1


def test_the_documented_bound_is_far_below_what_recovers_the_hidden_matrix():
    """docs/sealed.md: a token's year of submissions to `stack-replay-k10-hidden` (200
    scenes, K=10) cannot name even the best experience of every scene."""
    margin = ladder_margin(200)
    assert margin == 0.08 and grid_size(margin) == 13
    bits = information_bound_bits(5 * 366, margin)
    assert bits < 200 * np.log2(10) / 4
    assert round(bits) == 154


# --------------------------------------------------------------- quota faults


def test_with_redis_down_sealed_submissions_are_refused_not_let_through(tmp_path, catalog):
    """Fault: Redis stops. A sealed submission gets 503 and nothing is stored or counted."""
    server = RedisServer(tmp_path / "redis").start()
    conn = redis_lib.Redis.from_url(server.url, socket_timeout=2, socket_connect_timeout=2)
    store = LocalStore(tmp_path / "store")
    client = make_app(store, conn, catalog, sealed_submissions_per_day=2).test_client()
    token = _token(client)
    server.stop()
    sealed = catalog.load_transfer(SEALED)
    for seed in range(4):
        response = submit_scores(client, token, scores_csv(sealed, seed=seed), setting=SEALED)
        assert response.status_code == 503, response.json
        assert response.json["error"]["code"] == "unavailable"
    assert not store.list_keys("submissions/") and not store.list_keys("open/")
    assert not store.list_keys("state/sealed-quota/")


class _FailingPuts(LocalStore):
    """A store that goes down for the writes whose key `fails` picks (StoreUnavailable)."""

    def __init__(self, root, fails) -> None:
        super().__init__(root)
        self.fails = fails

    def put_bytes(self, key, data, content_type="application/octet-stream"):
        if self.fails(key):
            raise StoreUnavailable("injected: the store went down")
        return super().put_bytes(key, data, content_type)


def test_a_submission_that_is_not_created_gives_its_quota_back(tmp_path, redis_conn, catalog):
    """Fault: the store fails after the quota was taken. The day's slot is not lost."""
    # the manifest write fails: down right after the quota was taken
    store = _FailingPuts(tmp_path / "store", fails=lambda key: key.startswith("open/"))
    client = make_app(store, redis_conn, catalog, sealed_submissions_per_day=1).test_client()
    token = _token(client)
    sealed = catalog.load_transfer(SEALED)
    for seed in range(3):
        response = submit_scores(client, token, scores_csv(sealed, seed=seed), setting=SEALED)
        assert response.status_code == 503, response.json
    counters = [int(redis_conn.get(k)) for k in redis_conn.scan_iter(QUOTA_KEY.format(
        owner="*", day="*"))]
    assert counters == [0]
    assert not store.list_keys("state/sealed-quota/")


class _RacingStore(LocalStore):
    """A store where a request's first look for its Idempotency-Key misses a record that a
    concurrent request with the same key has just written (the race, made deterministic)."""

    hide_once = True

    def get_bytes(self, key):
        if key.startswith("idempotency/") and self.hide_once:
            self.hide_once = False
            raise ObjectNotFound(key)
        return super().get_bytes(key)


def test_a_concurrent_retry_with_the_same_key_is_not_charged_twice(tmp_path, redis_conn, catalog):
    """Race: two requests with one Idempotency-Key; the second answers the first's
    submission and must give its quota claim back."""
    store = _RacingStore(tmp_path / "store")
    client = make_app(store, redis_conn, catalog, sealed_submissions_per_day=5).test_client()
    token = _token(client)
    body = scores_csv(catalog.load_transfer(SEALED))
    headers = {**bearer(token), "Idempotency-Key": "retry-1"}

    def post():
        return client.post("/api/v1/submissions", headers=headers,
                           data={"file": (io.BytesIO(body), "scores.csv"), "setting": SEALED},
                           content_type="multipart/form-data")

    first = post()
    store.hide_once = True
    second = post()
    assert first.status_code == second.status_code == 202
    assert second.headers.get("Idempotent-Replayed") == "true"
    assert first.json["id"] == second.json["id"]
    assert len(store.list_keys("state/sealed-quota/")) == 1
    assert [int(redis_conn.get(k)) for k in redis_conn.scan_iter("expaudit:sealed:*")] == [1]


def test_a_submission_created_before_a_failure_keeps_its_charge(tmp_path, redis_conn, catalog):
    """Fault: the store fails after the submission exists; the reconciler will audit it, so
    giving the quota back would make it a free sealed submission."""
    # fails right after the submission's manifest and status were written
    store = _FailingPuts(tmp_path / "store", fails=lambda key: key.endswith("/public"))
    client = make_app(store, redis_conn, catalog, sealed_submissions_per_day=5).test_client()
    token = _token(client)
    response = submit_scores(client, token, scores_csv(catalog.load_transfer(SEALED)),
                             setting=SEALED, public="true")
    assert response.status_code == 503
    assert len([k for k in store.list_keys("submissions/") if k.endswith("/manifest.json")]) == 1
    assert len(store.list_keys("state/sealed-quota/")) == 1
    assert [int(redis_conn.get(k)) for k in redis_conn.scan_iter("expaudit:sealed:*")] == [1]


def test_a_full_report_stored_on_a_sealed_setting_is_not_republished(store, redis_conn, catalog):
    """Upgrade: a report written before sealed reports existed holds every metric; the
    next rebuild must not publish it."""
    from service.queues.jobs import JobContext, install_context, publish_job
    from service.submissions.publishing import AuditOptions

    client = make_app(store, redis_conn, catalog).test_client()
    token = _token(client)
    sid = _submit_and_run(client, token, scores_csv(catalog.load_transfer(SEALED)), store,
                          redis_conn, catalog)
    assert client.post(f"/api/v1/submissions/{sid}/publish",
                       headers=bearer(token)).status_code in (200, 202)
    run_jobs(store, redis_conn, catalog)
    old = {"inputs": {"setting_id": SEALED}, "reference": {"success_rule": 0.123457,
                                                           "quality": {"e": 0.654321}}}
    store.put_bytes(f"submissions/{sid}/reports/{SEALED}.json", json.dumps(old).encode())
    install_context(JobContext(store=store, redis=redis_conn, catalog=catalog,
                               options=AuditOptions(100, 100)))
    try:
        publish_job(None)
    finally:
        install_context(None)
    published = b"".join(_published(store).values())
    assert b"0.654321" not in published and b"0.123457" not in published


def test_a_sealed_setting_stays_out_of_the_cross_setting_summary(store, redis_conn, catalog):
    """Its released, rounded numbers (and only improving rows) would bias a mean of A."""
    client = make_app(store, redis_conn, catalog).test_client()
    token = _token(client)
    for setting in (SEALED, "toy-k4"):
        assert submit_scores(client, token, scores_csv(catalog.load_transfer(setting)),
                             setting=setting, public="true").status_code == 202
    run_jobs(store, redis_conn, catalog)
    index = json.loads(store.get_bytes("leaderboard/index.json"))
    summary = json.dumps(index["cross_setting"])
    assert "toy-k4" in summary
    left_out = {entry[0] if isinstance(entry, list) else entry.get("setting_id"): entry
                for entry in index["cross_setting"].get("left_out", [])}
    assert SEALED in left_out and "sealed" in json.dumps(left_out[SEALED])
    assert SEALED not in json.dumps({k: v for k, v in index["cross_setting"].items()
                                     if k != "left_out"})
