"""What mutation testing found unchecked about a sealed setting: the public site never
shows its quality range (an exact number of its hidden outcomes), and a submission whose
manifest reached the store keeps its sealed-quota charge when the status write fails."""

from __future__ import annotations

import io
import json

from leaderboard.metrics.discrimination import quality_range
from service.submissions.publishing import AuditOptions, rebuild_leaderboard, setting_infos
from service.store.storage import LocalStore, StoreUnavailable
from tests.support.servers import ADMIN_TOKEN, bearer, make_app, scores_csv

SEALED = "toy-sealed"
PUBLIC = "toy-k4"


def _numbers(document, inside: bool = False):
    """Every number in the parts of a JSON document about the sealed setting."""
    if isinstance(document, dict):
        inside = inside or SEALED in document.values()
        for key, value in document.items():
            yield from _numbers(value, inside or key == SEALED)
    elif isinstance(document, list):
        for value in document:
            yield from _numbers(value, inside)
    elif inside and isinstance(document, (int, float)) and not isinstance(document, bool):
        yield round(float(document), 6)


def _quality(catalog, setting_id: str) -> float:
    return quality_range(catalog.load_transfer(setting_id).outcomes.astype(float).mean(axis=2))


def test_the_site_never_publishes_a_sealed_settings_quality_range(store, catalog):
    """The quality range (best experience's mean success minus the worst's) of a complete
    public setting is on the site; a sealed setting's, also complete, is nowhere there."""
    infos = {info.setting.id: info for info in setting_infos(catalog)}
    assert infos[PUBLIC].quality_range == _quality(catalog, PUBLIC)
    assert infos[SEALED].cells_done == infos[SEALED].cells_total > 0  # complete, yet not shown
    assert infos[SEALED].quality_range is None
    rebuild_leaderboard(store, catalog, AuditOptions(100, 100))
    files = {key: store.get_bytes(key) for key in store.list_keys("leaderboard/")}
    index = json.loads(files["leaderboard/index.json"])
    settings = {s["setting_id"]: s for s in index["settings"]}
    assert settings[PUBLIC]["quality_range"] == _quality(catalog, PUBLIC)
    assert settings[SEALED]["quality_range"] is None
    hidden = round(_quality(catalog, SEALED), 6)
    for key, body in files.items():
        if key.endswith(".json"):
            assert hidden not in set(_numbers(json.loads(body), SEALED in key)), key
        elif SEALED in key:
            assert f"{hidden:.3f}" not in body.decode("utf-8", "replace"), key


class _StatusFails(LocalStore):
    """A store that goes down on a submission's status object, after its manifest."""

    def put_bytes(self, key, data, content_type="application/octet-stream"):
        if key.startswith("submissions/") and key.endswith("/status.json"):
            raise StoreUnavailable("injected: the store went down")
        return super().put_bytes(key, data, content_type)


def test_a_submission_whose_status_write_fails_after_its_manifest_keeps_its_charge(
        tmp_path, redis_conn, catalog):
    """The manifest is stored, so the reconciler audits the submission: giving the day's
    quota back would make it a free sealed submission."""
    failing = _StatusFails(tmp_path / "store")
    client = make_app(failing, redis_conn, catalog, sealed_submissions_per_day=5).test_client()
    made = client.post("/api/v1/tokens", json={"name": "lab-x", "owner": "lab-x"},
                       headers=bearer(ADMIN_TOKEN))
    assert made.status_code == 201, made.json
    token = made.json["token"]
    response = client.post("/api/v1/submissions", headers=bearer(token), content_type="multipart/form-data",
                           data={"file": (io.BytesIO(scores_csv(catalog.load_transfer(SEALED))),
                                          "scores.csv"), "setting": SEALED})
    assert response.status_code == 503, response.json
    manifests = [k for k in failing.list_keys("submissions/") if k.endswith("/manifest.json")]
    assert len(manifests) == 1
    sid = manifests[0].split("/")[1]
    assert failing.exists(f"open/{sid}")  # what the reconciler finishes and audits
    assert len(failing.list_keys("state/sealed-quota/")) == 1
    assert [int(redis_conn.get(k)) for k in redis_conn.scan_iter("expaudit:sealed:*")] == [1]
