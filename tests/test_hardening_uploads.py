"""Hostile uploads: decompression bombs in Parquet files and selector archives, over real HTTP.

Memory is bounded for real: the web worker's address space is capped with
`prlimit` after it has warmed up, so a reader that decodes what a bomb
unpacks to fails (500 or a dead worker) instead of answering the clear 422
these tests expect.
"""

from __future__ import annotations

import io
import resource

import numpy as np
import pandas as pd
import pytest
import requests

from leaderboard.errors import InputError
from tests.servers import (ADMIN_TOKEN, ServiceStack, _descendants, redis_server,  # noqa: F401
                           scores_rows, synthetic_setting, write_catalog)

HEADROOM = 768 * 1024 * 1024
"""Address space a web worker may grow by past its warmed-up size in these tests: room for
any upload the service accepts, and far less than the bombs unpack to."""


def parquet_bomb(rows: int = 1_000_000, chars: int = 2000, column: str = "scene_id") -> bytes:
    """One dictionary-encoded `chars`-character string repeated `rows` times (about 200 KB);
    without a stored schema it decodes to plain strings, `rows` x `chars` bytes."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    values = pa.DictionaryArray.from_arrays(pa.array(np.zeros(rows, dtype=np.int32)),
                                            pa.array(["x" * chars]))
    buffer = io.BytesIO()
    pq.write_table(pa.table({column: values}), buffer, store_schema=False)
    return buffer.getvalue()


def _parquet(frame: pd.DataFrame, **options) -> bytes:
    buffer = io.BytesIO()
    frame.to_parquet(buffer, index=False, **options)
    return buffer.getvalue()


@pytest.fixture(scope="module")
def stack(tmp_path_factory, redis_server):  # noqa: F811
    directory = tmp_path_factory.mktemp("hostile")
    setting = synthetic_setting("hostile-k3", k=3, n_states=4, draws=2, seeds=2)
    catalog = write_catalog(directory / "catalog", setting)
    stack = ServiceStack(directory, redis_server, catalog,
                         extra_env={"EXPAUDIT_MAX_ACTIVE_SUBMISSIONS": "100"})
    stack.start_web(workers=1)
    token = requests.post(f"{stack.url}/api/v1/tokens", json={"name": "hostile"},
                          headers={"Authorization": f"Bearer {ADMIN_TOKEN}"}, timeout=10).json()["token"]
    headers = {"Authorization": f"Bearer {token}"}
    # warm up: the first Parquet read starts Arrow's thread pool and allocator arenas
    summary, data = setting
    warm = requests.post(f"{stack.url}/api/v1/submissions", headers=headers,
                         files={"file": ("s.parquet", _parquet(pd.DataFrame(scores_rows(data))))},
                         data={"setting": summary.id}, timeout=30)
    assert warm.status_code == 202, warm.text
    workers = _descendants(stack.web.proc.pid)
    assert len(workers) == 1, workers
    size = _vm_size(workers[0])
    resource.prlimit(workers[0], resource.RLIMIT_AS, (size + HEADROOM, size + HEADROOM))
    yield stack, setting, headers, workers[0]
    stack.stop()


def _vm_size(pid: int) -> int:
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    raise AssertionError(f"no VmSize for {pid}")


def _post_scores(stack, headers, body: bytes, filename: str, setting: str):
    return requests.post(f"{stack.url}/api/v1/submissions", headers=headers,
                         files={"file": (filename, body)}, data={"setting": setting}, timeout=60)


def test_a_parquet_bomb_is_a_422_naming_the_column_and_the_worker_stays_small(stack):
    stack, (summary, _data), headers, worker = stack
    bomb = parquet_bomb()
    assert len(bomb) < 300_000  # a small file: it passes every upload and footer limit
    response = _post_scores(stack, headers, bomb, "bomb.parquet", summary.id)
    assert response.status_code == 422, response.text[:500]
    error = response.json()["error"]
    assert error["code"] == "invalid_scores" and error["field"] == "scene_id"
    assert error["line"] == 2 and "is a cell of 2000 bytes; at most 1024 are read" in error["message"]
    assert _descendants(stack.web.proc.pid) == [worker]  # the same worker: it did not die


def test_cells_within_the_limit_are_bounded_by_what_they_decode_to(monkeypatch):
    """Below the cell limit the decoded size is summed batch by batch, not read from the
    footer (in this process, with a small budget)."""
    import service.uploads
    from service.uploads import read_frame

    body = parquet_bomb(rows=200_000, chars=100)
    monkeypatch.setattr(service.uploads, "MAX_PARQUET_UNPACKED_BYTES", 1_000_000)
    with pytest.raises(InputError, match="decodes to more than 1000000 bytes by line 65537; "
                                         "at most 1000000 are read"):
        read_frame(body, "parquet", "many.parquet")


def test_text_where_numbers_are_expected_is_refused_from_the_schema(stack):
    stack, (summary, data), headers, _worker = stack
    rows = pd.DataFrame(scores_rows(data)).astype({"score": str})
    response = _post_scores(stack, headers, _parquet(rows), "s.parquet", summary.id)
    assert response.status_code == 422, response.text[:500]
    error = response.json()["error"]
    assert error["field"] == "score" and "it must hold numbers" in error["message"]


def test_nested_and_too_many_columns_are_refused_from_the_schema(stack):
    stack, (summary, data), headers, _worker = stack
    nested = pd.DataFrame({"scene_id": [["a"] * 3], "experience_id": ["e"], "score": [1.0]})
    response = _post_scores(stack, headers, _parquet(nested), "s.parquet", summary.id)
    assert response.status_code == 422 and response.json()["error"]["field"] == "scene_id"
    assert "is a nested column" in response.json()["error"]["message"]
    wide = pd.DataFrame({f"c{i}": [1.0] for i in range(40)})
    response = _post_scores(stack, headers, _parquet(wide), "s.parquet", summary.id)
    assert response.status_code == 422
    assert "has 40 columns; at most 16 are read" in response.json()["error"]["message"]


def test_a_valid_parquet_upload_still_reads_like_its_csv(stack):
    stack, (summary, data), headers, _worker = stack
    frame = pd.DataFrame(scores_rows(data))
    for body in (_parquet(frame), _parquet(frame.astype({"scene_id": "category"})),
                 _parquet(frame, compression="zstd", use_dictionary=False)):
        response = _post_scores(stack, headers, body, "s.parquet", summary.id)
        assert response.status_code == 202, response.text[:500]
