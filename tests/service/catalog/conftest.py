"""Fixtures of the catalog tests: the app serves the real benchmark catalog (the committed
frozen data), not the toy one, so downloads are the files users get."""

from __future__ import annotations

import pytest

from service.catalog.catalog import BenchmarkCatalog
from tests.support.servers import make_app


@pytest.fixture()
def app(store, redis_conn):
    """The Flask app on the real Redis and local store, serving the benchmark catalog."""
    return make_app(store, redis_conn, BenchmarkCatalog())
