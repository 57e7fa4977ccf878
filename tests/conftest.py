"""Fixtures every part of the suite may use: the real servers (Redis, the S3 server), a local
store and the toy catalog. A folder's own fixtures are in its own conftest.py; helpers that are
not fixtures are in tests/support/."""

# Before a test module loads numpy, torch or MuJoCo (some import robosuite directly): the
# runner package pins the kernels the stored cells ran with and makes rendering headless.
import simulator  # noqa: F401

import pytest  # noqa: E402

from tests.support.servers import RedisServer, SeaweedServer, toy_catalog  # noqa: E402


# ---------------------------------------------------------------- real servers


@pytest.fixture(scope="module")
def redis_server(tmp_path_factory):
    """A real Redis on a free port, one per test module."""
    server = RedisServer(tmp_path_factory.mktemp("redis")).start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def seaweed_server(tmp_path_factory):
    """A real S3 server (SeaweedFS) on free ports, one per test module."""
    server = SeaweedServer(tmp_path_factory.mktemp("weed")).start()
    yield server
    server.stop()


@pytest.fixture()
def redis_conn(redis_server):
    """A client of the module's Redis, its database emptied first."""
    import redis

    conn = redis.Redis.from_url(redis_server.url)
    conn.flushdb()
    yield conn
    conn.close()


@pytest.fixture()
def catalog():
    """The toy catalog of the service tests (`toy_catalog`)."""
    return toy_catalog()


@pytest.fixture()
def store(tmp_path):
    """An empty local-disk store."""
    from service.store.storage import LocalStore

    return LocalStore(tmp_path / "store")


# ---------------------------------------------------------------- the sandbox's demo setting


@pytest.fixture(scope="module")
def demo(tmp_path_factory, request):
    """The sandbox's demo /input tree, one per test module: (directory, setting).

    A module sets `DEMO_SIZES` (keyword arguments of `sandbox.demo.demo_input`) for another
    number of experiences or scenes, or another seed."""
    from sandbox.demo import demo_input

    directory = tmp_path_factory.mktemp("demo") / "input"
    return directory, demo_input(directory, **getattr(request.module, "DEMO_SIZES", {}))


@pytest.fixture
def small_demo():
    """The demo setting in memory, two experiences and three scenes: (setting, library, scenes)."""
    from sandbox.demo import demo_data

    return demo_data(n_experiences=2, n_scenes=3)
