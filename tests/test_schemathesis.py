"""Property-based API tests from the OpenAPI document (schemathesis), bounded in time.

Every generated request against the real app (real Redis, local store, a
small catalog) must get a documented status code, a documented content type,
a body that matches the response schema, and never a 5xx.
"""

from __future__ import annotations

import threading

import jsonschema_rs
import pytest
import schemathesis
from hypothesis import HealthCheck, Phase, settings
from werkzeug.serving import make_server
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (content_type_conformance, response_schema_conformance,
                                               status_code_conformance)

from service.openapi import openapi_document
from service.storage import LocalStore
from tests.servers import ADMIN_TOKEN, make_app, redis_server, toy_catalog  # noqa: F401

CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance,
          response_schema_conformance]


schemathesis.serializer.alias("application/vnd.apache.parquet", "application/octet-stream")
"""A Parquet upload is raw bytes on the wire, like application/octet-stream."""

schema = schemathesis.openapi.from_dict(openapi_document())
"""Built from the document itself (a pure function), so collecting connects to nothing."""


@pytest.fixture(scope="module")
def service_app(redis_server, tmp_path_factory):  # noqa: F811
    import redis

    conn = redis.Redis.from_url(redis_server.url)
    conn.flushdb()
    store = LocalStore(tmp_path_factory.mktemp("schemathesis-store"))
    return make_app(store, conn, toy_catalog(), rate_limit_per_minute=100000)


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
