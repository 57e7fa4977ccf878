"""Property-based API tests from the OpenAPI document (schemathesis), bounded in time.

Every generated request against the real app (real Redis, local store, a
small catalog) must get a documented status code, a documented content type,
a body that matches the response schema, and never a 5xx: once with the
admin token, and once with a lab token that does not own the one
submission stored (each generated request aimed at that submission, or at
the owner's token, where the operation takes one). A non-owner never gets a
2xx for it, never sees its id in a response, and after every request the
submission is still the owner's alone.
"""

from __future__ import annotations

import io
import threading
from dataclasses import dataclass

import jsonschema_rs
import pytest
import schemathesis
from hypothesis import HealthCheck, Phase, settings
from werkzeug.serving import make_server
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (content_type_conformance, response_schema_conformance,
                                               status_code_conformance)

from service.web.openapi import openapi_document
from service.store.storage import LocalStore
from tests.support.servers import ADMIN_TOKEN, bearer, make_app, run_jobs, scores_csv, toy_catalog

CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance,
          response_schema_conformance]


schemathesis.serializer.alias("application/vnd.apache.parquet", "application/octet-stream")
"""A Parquet upload is raw bytes on the wire, like application/octet-stream."""

schema = schemathesis.openapi.from_dict(openapi_document())
"""Built from the document itself (a pure function), so collecting connects to nothing."""


@dataclass(frozen=True)
class Backing:
    store: LocalStore
    redis: object
    catalog: object


@pytest.fixture(scope="module")
def backing(redis_server, tmp_path_factory):
    import redis

    conn = redis.Redis.from_url(redis_server.url)
    conn.flushdb()
    yield Backing(LocalStore(tmp_path_factory.mktemp("schemathesis-store")), conn, toy_catalog())
    conn.close()


@pytest.fixture(scope="module")
def service_app(backing):
    return make_app(backing.store, backing.redis, backing.catalog, rate_limit_per_minute=100000)


@dataclass(frozen=True)
class Parties:
    """Two lab tokens; `submission` (audited, not public) belongs to `owner` alone."""

    owner: str
    owner_id: str
    stranger: str
    submission: str


@pytest.fixture(scope="module")
def parties(service_app, backing) -> Parties:
    client = service_app.test_client()
    tokens = [client.post("/api/v1/tokens", json={"name": name, "owner": name}, headers=bearer(ADMIN_TOKEN)).json
              for name in ("owner", "stranger")]
    body = scores_csv(backing.catalog.load_transfer("toy-k4"))
    created = client.post("/api/v1/submissions", data={"file": (io.BytesIO(body), "s.csv"),
                                                       "setting": "toy-k4"},
                          headers=bearer(tokens[0]["token"]), content_type="multipart/form-data")
    assert created.status_code == 202, created.json
    run_jobs(backing.store, backing.redis, backing.catalog)
    parties = Parties(tokens[0]["token"], tokens[0]["token_id"], tokens[1]["token"], created.json["id"])
    _assert_private(client, parties)
    return parties


def _assert_private(client, parties: Parties) -> None:
    """The owner reads the submission and its report; the stranger gets 404 for both."""
    for path in (f"/api/v1/submissions/{parties.submission}",
                 f"/api/v1/submissions/{parties.submission}/report"):
        assert client.get(path, headers=bearer(parties.owner)).status_code == 200, path
        assert client.get(path, headers=bearer(parties.stranger)).status_code == 404, path
    status = client.get(f"/api/v1/submissions/{parties.submission}", headers=bearer(parties.owner)).json
    assert status["public"] is False


@pytest.fixture(scope="module")
def base_url(service_app):
    """The app behind a real HTTP server (werkzeug, in a thread) on a free port."""
    server = make_server("127.0.0.1", 0, service_app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}"
    server.shutdown()
    thread.join(5)


@schema.parametrize()
@settings(max_examples=10, deadline=None, phases=[Phase.explicit, Phase.generate],
          suppress_health_check=list(HealthCheck))
def test_api_conforms_to_its_openapi_document(case, base_url):
    case.call_and_validate(base_url=base_url, checks=CHECKS,
                           headers={"Authorization": f"Bearer {ADMIN_TOKEN}"})


@schema.parametrize()
@settings(max_examples=10, deadline=None, phases=[Phase.explicit, Phase.generate],
          suppress_health_check=list(HealthCheck))
def test_a_non_owner_never_gets_anothers_submission(case, base_url, parties, service_app):
    targets = {"submission_id": parties.submission, "token_id": parties.owner_id}
    aimed = False
    for name in set(case.path_parameters or {}) & set(targets):
        case.path_parameters[name] = targets[name]
        aimed = True
    response = case.call(base_url=base_url, headers=bearer(parties.stranger))
    case.validate_response(response, checks=CHECKS)
    if aimed and case.method.upper() == "OPTIONS":
        assert response.content in (b"", None)  # the allowed methods, in a header only
    elif aimed:
        assert response.status_code >= 400, f"{case.method} {case.formatted_path}: {response.status_code}"
    else:
        assert parties.submission not in response.text
    _assert_private(service_app.test_client(), parties)


def test_openapi_document_is_valid(service_app):
    loaded = schemathesis.openapi.from_dict(openapi_document())
    loaded.validate()  # against the OpenAPI 3.0 meta-schema
    broken = openapi_document()
    broken["paths"]["/healthz"]["get"]["responses"]["200"] = {"content": {}}  # no description
    with pytest.raises(jsonschema_rs.ValidationError, match="is not valid under any of the schemas"):
        schemathesis.openapi.from_dict(broken).validate()
    operations = [op for op in loaded.get_all_operations()]
    assert len(operations) >= 15
    served = service_app.test_client().get("/api/v1/openapi.json")
    assert served.status_code == 200 and served.json["openapi"] == "3.0.3"
    routes = {rule.rule.replace("<", "{").replace(">", "}").replace("path:", "")
              for rule in service_app.url_map.iter_rules()}
    for path in openapi_document()["paths"]:
        assert path in routes, f"{path} is documented but not served"
