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
    from service.storage import LocalStore

    return LocalStore(tmp_path / "store")


# ---------------------------------------------------------------- audit engine fixtures


@pytest.fixture
def audit_data_factory():
    """Build a `TransferData` from an outcome tensor (K, Q, S) for audit tests.

    Scenes default to one state per scene, layout 0, draw 0; experiences are
    named e0..e{K-1} and scenes s0..s{Q-1}.
    """
    import numpy as np

    from leaderboard.matrix import SceneTable, TransferData

    def build(outcomes, states=None, layout=None, draws=None, experience_ids=None, scene_ids=None):
        outcomes = np.asarray(outcomes, dtype=np.int8)
        if outcomes.ndim == 2:
            outcomes = outcomes[:, :, None]
        k, q, _ = outcomes.shape
        return TransferData(
            experience_ids=tuple(experience_ids or (f"e{i}" for i in range(k))),
            scenes=SceneTable(
                scene_ids=tuple(scene_ids or (f"s{j}" for j in range(q))),
                state_ids=np.asarray(states if states is not None else [f"st{j}" for j in range(q)], dtype=object),
                layout_level=np.asarray(layout if layout is not None else np.zeros(q), dtype=np.int64),
                appearance_draw=np.asarray(draws if draws is not None else np.zeros(q), dtype=np.int64),
            ),
            outcomes=outcomes,
        )

    return build


@pytest.fixture
def audit_random_setting(audit_data_factory):
    """A seeded synthetic setting: K=12 experiences, 12 states x 5 draws, 5 seeds, with scores.

    Experience quality and scene difficulty both vary, so every metric is defined.
    """
    import numpy as np

    rng = np.random.default_rng(7)
    k, n_states, n_draws, n_seeds = 12, 12, 5, 5
    q = n_states * n_draws
    states = np.repeat([f"st{i}" for i in range(n_states)], n_draws)
    layout = np.repeat(rng.integers(0, 4, n_states), n_draws)
    draws = np.tile(np.arange(n_draws), n_states)
    p = np.clip(rng.random((k, 1)) * 0.7 + rng.random((1, q)) * 0.5 - 0.1, 0, 1)
    outcomes = (rng.random((k, q, n_seeds)) < p[..., None]).astype(np.int8)
    data = audit_data_factory(outcomes, states=states, layout=layout, draws=draws)
    scores = rng.normal(size=(k, q)) + 0.5 * p
    return data, scores
