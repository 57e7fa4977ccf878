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
from tests.support.servers import (ServiceStack, _descendants, bearer, new_token, scores_rows,
                                   synthetic_setting, web_stack)

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
def stack(tmp_path_factory, redis_server):
    directory = tmp_path_factory.mktemp("hostile")
    setting = synthetic_setting("hostile-k3", k=3, n_states=4, draws=2, seeds=2)
    stack = web_stack(directory, redis_server, setting, EXPAUDIT_MAX_ACTIVE_SUBMISSIONS="100")
    headers = bearer(new_token(stack.url, "hostile"))
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
    import leaderboard.scores.limits
    from leaderboard.scores import read_frame

    body = parquet_bomb(rows=200_000, chars=100)
    monkeypatch.setattr(leaderboard.scores.limits, "MAX_PARQUET_UNPACKED_BYTES", 1_000_000)
    with pytest.raises(InputError, match="decodes to more than 1000000 bytes by line 65537; "
                                         "at most 1000000 are read"):
        read_frame(body, "parquet", "many.parquet")


def test_a_page_is_refused_from_its_header_before_it_is_decompressed():
    """One page of 80 MB (40,000 plain-encoded 2,000-character strings, 16 KB compressed):
    Arrow would allocate its whole size to decompress it; its header says so first."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from leaderboard.scores import read_frame

    values = pa.DictionaryArray.from_arrays(pa.array(np.zeros(40_000, dtype=np.int32)),
                                            pa.array(["x" * 2000]))
    buffer = io.BytesIO()
    pq.write_table(pa.table({"scene_id": values}), buffer, store_schema=False, use_dictionary=False,
                   compression="zstd", data_page_size=2**31 - 1, max_rows_per_page=40_000)
    assert len(buffer.getvalue()) < 100_000
    with pytest.raises(InputError, match=r"big\.parquet, field 'scene_id': has a page of 80160008 "
                                         r"bytes; at most 67108864 are read"):
        read_frame(buffer.getvalue(), "parquet", "big.parquet")


def test_long_cells_stored_whole_are_refused_at_their_line():
    import pyarrow as pa
    import pyarrow.parquet as pq

    from leaderboard.scores import read_frame

    values = pa.array(["s"] * 70_000 + ["y" * 1500])
    buffer = io.BytesIO()
    pq.write_table(pa.table({"scene_id": values}), buffer, use_dictionary=False)
    with pytest.raises(InputError, match=r"plain\.parquet line 70002, field 'scene_id': is a cell of "
                                         r"1500 bytes; at most 1024 are read"):
        read_frame(buffer.getvalue(), "parquet", "plain.parquet")


def test_prefix_sharing_text_is_refused_before_it_is_decoded():
    """DELTA_BYTE_ARRAY stores each value as a suffix of the one before: 1,000-byte values
    cost a few bytes each, so the pages do not bound what they decode to."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from leaderboard.scores import read_frame

    values = pa.array(["x" * 1000 + f"{i:07d}" for i in range(20_000)])
    buffer = io.BytesIO()
    pq.write_table(pa.table({"scene_id": values}), buffer, use_dictionary=False,
                   column_encoding={"scene_id": "DELTA_BYTE_ARRAY"})
    with pytest.raises(InputError, match="field 'scene_id': is DELTA_BYTE_ARRAY-encoded"):
        read_frame(buffer.getvalue(), "parquet", "delta.parquet")


def test_a_damaged_page_header_is_an_unreadable_file():
    import pyarrow.parquet as pq

    from leaderboard.scores import read_frame

    body = bytearray(_parquet(pd.DataFrame({"scene_id": ["a"], "experience_id": ["e"], "score": [1.0]})))
    chunk = pq.ParquetFile(io.BytesIO(bytes(body))).metadata.row_group(0).column(0)
    start = chunk.dictionary_page_offset or chunk.data_page_offset
    body[start:start + 8] = b"\x1f" * 8  # field headers of an unknown type
    with pytest.raises(InputError, match="cannot be read as parquet: a page header"):
        read_frame(bytes(body), "parquet", "damaged.parquet")


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


# ------------------------------------------------------------ selector archives

def archive_bomb(gib: int = 8) -> bytes:
    """A .tar.gz (about 1 MB per GiB) whose one member, `selector.py`, is `gib` GiB of zeros:
    gzip members of 64 MiB of zeros each, concatenated (a valid gzip stream)."""
    import gzip
    import tarfile

    info = tarfile.TarInfo("selector.py")
    info.size = gib * 2**30
    zeros = gzip.compress(b"\0" * 2**26, compresslevel=9)
    return gzip.compress(info.tobuf(format=tarfile.GNU_FORMAT)) + zeros * (16 * gib)


def _zero_files(count: int, size: int) -> bytes:
    """A .tar.gz of `count` files of `size` zero bytes each and a one-line selector.py."""
    import tarfile

    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for name, data in [*((f"weights{i}.bin", b"\0" * size) for i in range(count)),
                           ("selector.py", b"print(1)\n")]:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def test_an_archive_that_unpacks_far_past_its_size_is_refused_by_its_ratio():
    from service.errors import ValidationFailed
    from service.selectors.archive import check_archive

    archive = _zero_files(40, 2**20)  # 40 MiB of zeros in about 40 KB
    with pytest.raises(ValidationFailed, match=r"unpacks to more than 16777216 bytes, over 100 "
                                               r"times its \d+ compressed bytes"):
        check_archive(archive, "zeros.tar.gz")
    small = _zero_files(4, 2**20)  # 4 MiB: under the size that is always allowed
    assert [str(e.path) for e in check_archive(small, "small.tar.gz").entries][-1] == "selector.py"


def test_a_member_is_refused_from_its_header_before_its_data_is_decompressed():
    """The streamed reader stops at the header: the gzip stream after it is never read, so
    a truncated stream there raises nothing else."""
    from service.errors import ValidationFailed
    from service.selectors.archive import check_archive

    bomb = archive_bomb(1)[:600_000]  # its header and a few hundred MiB of zeros, cut short
    with pytest.raises(ValidationFailed, match=r"unpacks to more than 60000000 bytes, over 100 times"):
        check_archive(bomb, "bomb.tar.gz")


@pytest.fixture(scope="module")
def selector_stack(tmp_path_factory, redis_server):
    """gunicorn with a short worker timeout on a tiny frozen root whose setting takes selectors."""
    from tests.support.tiny_frozen import (copy_cells, copy_library, copy_query_set, experience_ids,
                                   real_data_available)

    if not real_data_available():
        pytest.skip("frozen data not built")
    directory = tmp_path_factory.mktemp("bombs")
    root = directory / "frozen"
    states = ["stack-orig-s00", "stack-orig-s10"]
    copy_library(root, experience_ids(3))
    copy_query_set(root, "stack-orig", states)
    copy_cells(root, "stack-orig", experience_ids(3), states)
    stack = ServiceStack(directory, redis_server, directory / "no-catalog",
                         extra_env={"EXPAUDIT_CATALOG": "", "EXPAUDIT_FROZEN_ROOT": str(root),
                                    "EXPAUDIT_SANDBOX": "local",
                                    "GUNICORN_CMD_ARGS": "--timeout 10"})
    stack.start_web(workers=1)
    yield stack, bearer(new_token(stack.url, "bombs"))
    stack.stop()


def test_an_archive_bomb_is_a_prompt_422_not_a_worker_timeout(selector_stack):
    stack, headers = selector_stack
    bomb = archive_bomb(8)
    assert len(bomb) < 10 * 2**20  # within the upload limit
    response = requests.post(f"{stack.url}/api/v1/submissions", headers=headers,
                             files={"selector": ("bomb.tar.gz", bomb, "application/gzip")},
                             data={"setting": "stack-replay-k3-orig"}, timeout=60)
    assert response.status_code == 422, response.text[:300]
    error = response.json()["error"]
    assert error["field"] == "selector"
    assert error["message"] == "selector archive 'bomb.tar.gz': unpacks to more than 268435456 bytes"
    zeros = _zero_files(40, 2**20)
    response = requests.post(f"{stack.url}/api/v1/submissions", headers=headers,
                             files={"selector": ("zeros.tar.gz", zeros, "application/gzip")},
                             data={"setting": "stack-replay-k3-orig"}, timeout=60)
    assert response.status_code == 422 and "over 100 times its" in response.json()["error"]["message"]
    assert "worker timeout" not in stack.web.log_tail(20000).lower()


def test_a_json_upload_with_a_new_key_per_row_is_refused_at_the_first_unknown_key(stack):
    """10,000 rows, each with a key of its own: a column per key would be 10^8 cells (800 MB of
    references, past the worker's headroom); the row loop refuses the first unknown key."""
    import json

    stack, (summary, data), headers, worker = stack
    rows = scores_rows(data)
    body = json.dumps([{**rows[i % len(rows)], f"k{i:05d}": 1} for i in range(10_000)]).encode()
    response = _post_scores(stack, headers, body, "keys.json", summary.id)
    assert response.status_code == 422, response.text[:500]
    error = response.json()["error"]
    assert error["field"] == "header" and error["line"] == 2 and error["value"] == "k00000"
    assert "has the key 'k00000', not a known column (expected: setting_id, scene_id, " \
           "experience_id, score)" in error["message"]
    assert _descendants(stack.web.proc.pid) == [worker]
