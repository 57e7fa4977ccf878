"""The sealed quota and the Ladder are kept per owner, not per token (issue 30, item 9).

The attack: revoke a token and have the operator issue a new one to the same
lab. Keyed by token, the new token came with a fresh daily quota and a fresh
Ladder, whose first release is free: any file's success, rounded to the
margin, whatever the lab's best already was. Each token now carries the owner
the operator named when creating it, and both are kept per owner; a token
from before owners existed is its own owner (its token id), so what it had is
kept.
"""

from __future__ import annotations

import io
import json
import subprocess
import sys

import numpy as np
import pytest
import requests

from service.auth.tokens import TokenRegistry, hash_token
from service.submissions.records import Manifest
from service.sealed.quota import take_sealed_quota
from service.sealed.report import LADDER_KEY, audit_sealed
from tests.support.servers import (ADMIN_TOKEN, bearer, make_app, run_jobs, scores_csv,
                                   synthetic_setting, web_stack)
from tests.support.submissions import submit_scores

SEALED = "toy-sealed"


def _create(client, name: str, owner: str | None) -> dict:
    body = {"name": name} if owner is None else {"name": name, "owner": owner}
    response = client.post("/api/v1/tokens", json=body, headers=bearer(ADMIN_TOKEN))
    assert response.status_code == 201, response.json
    return response.json


def _revoke(client, token_id: str) -> None:
    response = client.delete(f"/api/v1/tokens/{token_id}", headers=bearer(ADMIN_TOKEN))
    assert response.status_code == 200 and response.json["revoked"] is True


def _report(client, token: str, sid: str) -> dict:
    response = client.get(f"/api/v1/submissions/{sid}/report", headers=bearer(token))
    assert response.status_code == 200, response.json
    return response.json


def _submit_and_report(client, token: str, body: bytes, store, redis_conn, catalog) -> dict:
    created = submit_scores(client, token, body, setting=SEALED)
    assert created.status_code == 202, created.json
    run_jobs(store, redis_conn, catalog)
    return _report(client, token, created.json["id"])


# ------------------------------------------------------------------ the attack


def test_a_new_token_for_the_same_owner_gets_no_fresh_sealed_quota(store, redis_conn, catalog):
    """Attack: spend the day's sealed quota with token A of "lab", have A revoked and a
    token B issued to "lab". B used to submit again at once (the quota was per token)."""
    client = make_app(store, redis_conn, catalog, sealed_submissions_per_day=2).test_client()
    body = scores_csv(catalog.load_transfer(SEALED))
    first = _create(client, "lab-a", "lab")
    assert [submit_scores(client, first["token"], body,
                          setting=SEALED).status_code for _ in range(2)] == [202, 202]
    spent = submit_scores(client, first["token"], body, setting=SEALED)
    assert spent.status_code == 429 and spent.json["error"]["code"] == "sealed_quota"
    _revoke(client, first["token_id"])

    second = _create(client, "lab-b", "lab")
    refused = submit_scores(client, second["token"], body, setting=SEALED)
    assert refused.status_code == 429, refused.json  # was 202: a fresh quota
    assert refused.json["error"]["code"] == "sealed_quota"
    assert "all the tokens of one owner" in refused.json["error"]["message"]
    assert int(refused.headers["Retry-After"]) > 0
    # Also while both tokens are live, and whatever case the operator typed the owner in.
    assert submit_scores(client, _create(client, "lab-c", "LAB")["token"], body,
                         setting=SEALED).status_code == 429
    # Another owner has a quota of its own.
    assert submit_scores(client, _create(client, "other", "other-lab")["token"], body,
                         setting=SEALED).status_code == 202
    assert len(store.list_keys("state/sealed-quota/lab/")) == 2
    assert len(store.list_keys("state/sealed-quota/other-lab/")) == 1


def test_a_new_token_for_the_same_owner_continues_the_ladder(store, redis_conn, catalog):
    """Attack: the first submission of a Ladder always releases. With a Ladder per token, a
    replacement token for the same lab released any file's success afresh, however far
    below the lab's best it was."""
    client = make_app(store, redis_conn, catalog, sealed_submissions_per_day=10).test_client()
    sealed = catalog.load_transfer(SEALED)
    first = _create(client, "lab-a", "lab")
    body = scores_csv(sealed)
    opening = _submit_and_report(client, first["token"], body, store, redis_conn, catalog)
    assert opening["release"]["new_best"] and opening["release"]["previous_best"] is None
    best = opening["reference"]["success_rule"]
    _revoke(client, first["token_id"])

    second = _create(client, "lab-b", "lab")
    probe = _submit_and_report(client, second["token"], body, store, redis_conn, catalog)
    assert not probe["release"]["new_best"], probe["release"]  # was a free first release
    assert probe["reference"]["success_rule"] is None
    assert probe["release"]["previous_best"] == best and probe["release"]["best"] == best
    assert probe["release"]["n_submissions"] == 2  # the bound counts the owner's submissions
    ladder = json.loads(store.get_bytes(LADDER_KEY.format(owner="lab", setting=SEALED)))
    assert len(ladder["releases"]) == 2
    assert not store.list_keys(f"state/sealed-ladder/{first['token_id']}/")
    assert not store.list_keys(f"state/sealed-ladder/{second['token_id']}/")

    stranger = _create(client, "other", "other-lab")  # another owner climbs a Ladder of its own
    own = _submit_and_report(client, stranger["token"], body, store, redis_conn, catalog)
    assert own["release"]["new_best"] and own["release"]["previous_best"] is None


# -------------------------------------------------------- creating tokens


@pytest.mark.parametrize("body,field", [
    ({"name": "lab"}, "owner"),                       # required, never a silent default
    ({"name": "lab", "owner": ""}, "owner"),
    ({"name": "lab", "owner": "../lab"}, "owner"),    # part of store and Redis keys
    ({"name": "lab", "owner": "a/b"}, "owner"),
    ({"name": "lab", "owner": "lab x"}, "owner"),
    ({"name": "lab", "owner": "lab:x"}, "owner"),
    ({"name": "lab", "owner": "x" * 65}, "owner"),
    ({"name": "lab", "owner": 5}, "owner"),
    ({"name": "lab", "owner": None}, "owner"),
])
def test_creating_a_token_needs_an_owner(store, redis_conn, catalog, body, field):
    client = make_app(store, redis_conn, catalog).test_client()
    response = client.post("/api/v1/tokens", json=body, headers=bearer(ADMIN_TOKEN))
    assert response.status_code == 422, response.json
    assert response.json["error"]["field"] == field
    assert not store.list_keys("tokens/")


def test_the_owner_is_kept_lowercased_and_listed(store, redis_conn, catalog):
    client = make_app(store, redis_conn, catalog).test_client()
    created = _create(client, "Lab A", "Lab.Group_1-x")
    assert created["owner"] == "lab.group_1-x"
    listed = client.get("/api/v1/tokens", headers=bearer(ADMIN_TOKEN)).json["tokens"]
    assert [(t["name"], t["owner"]) for t in listed] == [("Lab A", "lab.group_1-x")]
    revoked = client.delete(f"/api/v1/tokens/{created['token_id']}", headers=bearer(ADMIN_TOKEN))
    assert revoked.json["owner"] == "lab.group_1-x"


# ------------------------------------------------------------- migration


def _legacy_token(store, secret: str, name: str = "old") -> str:
    """A token record as the store held it before owners existed; returns its token id."""
    digest = hash_token(secret)
    token_id = f"tok-{digest[:16]}"
    record = {"token_id": token_id, "name": name, "admin": False,
              "created_at": "2026-01-01T00:00:00.000000Z", "revoked": False}
    store.put_bytes(f"tokens/{digest}.json", json.dumps(record).encode(), "application/json")
    return token_id


def test_a_token_from_before_owners_keeps_its_quota_and_ladder(store, redis_conn, catalog):
    """Migration: a token created before owners is its own owner (its token id), which is
    where its quota claims and its Ladder were kept: upgrading refills and resets nothing.
    A replacement issued to that owner continues them."""
    secret = "ea_legacy-secret-not-a-real-token"
    token_id = _legacy_token(store, secret)
    sealed = catalog.load_transfer(SEALED)
    scores = np.random.default_rng(0).normal(size=sealed.outcomes.shape[:2])
    before = audit_sealed(store, redis_conn, token_id, SEALED, "sub-before", sealed, scores)
    take_sealed_quota(redis_conn, store, token_id, 2)  # one of two counted before the upgrade
    redis_conn.flushdb()  # and a Redis that lost the counter: rebuilt from the claims
    client = make_app(store, redis_conn, catalog, sealed_submissions_per_day=2).test_client()

    listed = client.get("/api/v1/tokens", headers=bearer(ADMIN_TOKEN)).json["tokens"]
    assert [(t["token_id"], t["owner"]) for t in listed] == [(token_id, token_id)]
    assert TokenRegistry(store, redis_conn, None).authenticate(secret).owner == token_id

    body = scores_csv(sealed)
    report = _submit_and_report(client, secret, body, store, redis_conn, catalog)
    assert report["release"]["previous_best"] == before["release"]["best"]  # its Ladder, kept
    assert submit_scores(client, secret, body,
                         setting=SEALED).status_code == 429  # its quota, kept: 2 of 2
    assert len(store.list_keys(f"state/sealed-quota/{token_id}/")) == 2

    _revoke(client, token_id)
    replacement = _create(client, "old-2", token_id)
    assert submit_scores(client, replacement["token"], body, setting=SEALED).status_code == 429
    ladder = json.loads(store.get_bytes(LADDER_KEY.format(owner=token_id, setting=SEALED)))
    assert set(ladder["releases"]) >= {"sub-before"} and len(ladder["releases"]) == 2


def test_a_manifest_from_before_owners_climbs_its_tokens_ladder():
    """A submission stored before owners (its audit still queued at the upgrade) goes
    through the Ladder its token had, the one at its token id."""
    fields = dict(submission_id="sub-1", owner="tok-0123456789abcdef", owner_name="old", name="r",
                  settings=("toy-sealed",), input_key="inputs/x", input_sha256="x",
                  input_format="csv", filename="s.csv", selection_only=False, created_at="")
    stored = {k: v for k, v in Manifest(**fields).to_dict().items() if k != "token_owner"}
    assert Manifest.from_dict(stored).sealed_owner == "tok-0123456789abcdef"
    assert Manifest(**fields, token_owner="lab").sealed_owner == "lab"


# ------------------------------------------------------------------- CLI


@pytest.fixture()
def live(tmp_path, redis_server):
    stack = web_stack(tmp_path, redis_server, synthetic_setting("owner-k3", k=3, n_states=2))
    yield stack
    stack.stop()


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "expaudit", "token", "create", *args],
                          capture_output=True, text=True, timeout=120)


def test_the_token_cli_needs_and_sends_the_owner(live):
    missing = _cli("--name", "lab", "--server", live.url, "--token", ADMIN_TOKEN)
    assert missing.returncode == 2 and "--owner" in missing.stderr
    made = _cli("--name", "lab", "--owner", "Lab", "--server", live.url, "--token", ADMIN_TOKEN)
    assert made.returncode == 0, made.stderr
    assert "owner: lab" in made.stderr
    secret = made.stdout.strip()
    listed = requests.get(f"{live.url}/api/v1/tokens", headers=bearer(ADMIN_TOKEN), timeout=60)
    assert [(t["name"], t["owner"]) for t in listed.json()["tokens"]] == [("lab", "lab")]
    mine = requests.get(f"{live.url}/api/v1/submissions", headers=bearer(secret), timeout=60)
    assert mine.status_code == 200
