"""What an upload that is refused says: the limit and the file when too large, the columns a
scores file may have and those it has, the character a name may not hold, and a `public`
flag read exactly as the API document and the error describe it."""

from __future__ import annotations

import io

import pytest

from tests.support.servers import ADMIN_TOKEN, bearer, make_app, scores_csv

LIMIT = 4096


@pytest.fixture()
def app(store, redis_conn, catalog):
    return make_app(store, redis_conn, catalog, max_upload_bytes=LIMIT)


@pytest.fixture()
def auth(client):
    response = client.post("/api/v1/tokens", json={"name": "lab-m", "owner": "lab-m"},
                           headers=bearer(ADMIN_TOKEN))
    return bearer(response.json["token"])


def _refused(response, status: int, field: str) -> dict:
    assert response.status_code == status, response.get_data(as_text=True)
    error = response.json["error"]
    assert error["field"] == field, error
    return error


def test_the_limit_is_published_for_clients(client):
    assert client.get("/api/v1/limits").json == {"max_upload_bytes": LIMIT}


def test_an_oversized_upload_names_the_file_its_size_and_the_limit(client, auth):
    body = b"scene_id,experience_id,score\n" + b"s,e,0.5\n" * 1000
    response = client.post("/api/v1/submissions?setting=toy-k4&filename=big.csv", data=body,
                           content_type="text/csv", headers=auth)
    error = _refused(response, 413, "body")
    assert error["message"] == (f"the upload 'big.csv' is {len(body):,} bytes, over this "
                                f"server's upload limit of {LIMIT:,} bytes")
    assert (error["limit_bytes"], error["size_bytes"]) == (LIMIT, len(body))


def test_wrong_columns_list_score_and_echo_the_columns_found(client, auth, catalog):
    rows = scores_csv(catalog.load_transfer("toy-k3")).decode().splitlines()
    body = "\n".join(["scene_id,experience_id,value", *rows[1:]]).encode()
    response = client.post("/api/v1/submissions?setting=toy-k3&filename=mine.csv", data=body,
                           content_type="text/csv", headers=auth)
    message = _refused(response, 422, "header")["message"]
    assert "expected: scene_id, experience_id, score" in message, message
    assert "the file's columns: scene_id, experience_id, value" in message, message


@pytest.mark.parametrize("name, why", [("rule <3", "character '<' at position 6"),
                                       ("a" * 101, "it is 101 characters long"),
                                       ("   ", "it is only spaces")])
def test_a_rejected_name_says_what_is_wrong(client, auth, catalog, name, why):
    response = client.post("/api/v1/submissions", headers=auth, data={
        "setting": "toy-k3", "name": name,
        "file": (io.BytesIO(scores_csv(catalog.load_transfer("toy-k3"))),
                 "s.csv")})
    assert why in _refused(response, 422, "name")["message"]


@pytest.mark.parametrize("value", ["yes", "1", "on", "no"])
def test_public_takes_true_or_false_as_its_error_says(client, auth, catalog, value):
    response = client.post(f"/api/v1/submissions?setting=toy-k3&filename=s.csv&public={value}",
                           data=scores_csv(catalog.load_transfer("toy-k3")),
                           content_type="text/csv", headers=auth)
    assert _refused(response, 422, "public")["message"] == (
        f"public must be true or false, got '{value}'")


@pytest.mark.parametrize("value, public", [("true", True), ("FALSE", False), ("", False)])
def test_public_true_or_false_is_taken(client, auth, catalog, value, public):
    response = client.post(f"/api/v1/submissions?setting=toy-k3&filename=s.csv&public={value}",
                           data=scores_csv(catalog.load_transfer("toy-k3")),
                           content_type="text/csv", headers=auth)
    assert response.status_code == 202, response.get_data(as_text=True)
    assert response.json["public"] is public
