"""Fixtures of the service tests: the app on the real Redis, the local store and the toy
catalog, and its test client. A module that needs another configuration overrides `app`."""

from __future__ import annotations

import pytest

from tests.support.servers import make_app


@pytest.fixture()
def app(store, redis_conn, catalog):
    """The Flask app with the default configuration."""
    return make_app(store, redis_conn, catalog)


@pytest.fixture()
def client(app):
    """A test client of `app`."""
    return app.test_client()
