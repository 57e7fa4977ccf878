"""What mutation testing found unchecked in the web app's error answers: a setting whose
data is not built on this installation is the client's 404 `not_available`, never a 500."""

from __future__ import annotations

import pytest

from service.catalog.catalog import BenchmarkCatalog
from tests.support.servers import make_app

SETTING = "stack-replay-k3-orig"


@pytest.mark.parametrize("what", ["outcomes", "scenes", "experiences"])
def test_a_setting_whose_data_is_not_built_answers_404_not_available(store, redis_conn,
                                                                     tmp_path, what):
    client = make_app(store, redis_conn, BenchmarkCatalog(tmp_path / "empty-root")).test_client()
    response = client.get(f"/api/v1/settings/{SETTING}/{what}")
    assert response.status_code == 404, response.json
    assert response.json == {"error": {
        "code": "not_available", "field": "setting_id",
        "message": f"the data of setting '{SETTING}' is not available here: its frozen data has "
                   f"not been generated (`expaudit data generate`)"}}
