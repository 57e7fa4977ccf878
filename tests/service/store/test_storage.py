"""The object store contract on a local directory and on a real SeaweedFS S3 server."""

from __future__ import annotations

import threading
import uuid

import pytest
import requests

from service.store.storage import (LocalStore, ObjectNotFound, S3Store, StoreUnavailable, check_key,
                             make_s3_client, parse_s3_url)
from tests.support.stores import local_or_s3_store



@pytest.fixture(params=["local", "s3"])
def store(request, tmp_path):
    return local_or_s3_store(request, tmp_path, "t-", 12)


def test_put_get_roundtrip_and_overwrite(store):
    store.put_bytes("a/b/c.json", b'{"x": 1}', "application/json")
    assert store.get_bytes("a/b/c.json") == b'{"x": 1}'
    store.put_bytes("a/b/c.json", b"second")
    assert store.get_bytes("a/b/c.json") == b"second"
    assert store.exists("a/b/c.json")
    assert not store.exists("a/b/missing.json")


def test_missing_key_raises_not_found(store):
    with pytest.raises(ObjectNotFound, match="object 'nope/x.bin' not found"):
        store.get_bytes("nope/x.bin")


def test_put_if_absent_writes_once(store):
    assert store.put_if_absent("inputs/sha256/abc", b"first") is True
    assert store.put_if_absent("inputs/sha256/abc", b"other") is False
    assert store.get_bytes("inputs/sha256/abc") == b"first"


def test_list_keys_by_prefix_sorted(store):
    for key in ["s/2/state.json", "s/1/state.json", "s/1/manifest.json", "t/1.json", "s10/x"]:
        store.put_bytes(key, b"1")
    assert store.list_keys("s/") == ["s/1/manifest.json", "s/1/state.json", "s/2/state.json"]
    assert store.list_keys("s/1/") == ["s/1/manifest.json", "s/1/state.json"]
    assert "t/1.json" in store.list_keys()


def test_delete_is_idempotent(store):
    store.put_bytes("d/x", b"1")
    store.delete("d/x")
    store.delete("d/x")
    assert not store.exists("d/x")


@pytest.mark.parametrize("key", ["../etc/passwd", "/abs", "a//b", "a/./b", "", "a b", "a\n", "a/b\n",
                                 "x" * 256, "d/" + "x" * 256, "/".join(["x" * 200] * 6)])
def test_unsafe_keys_rejected(key):
    with pytest.raises(ValueError, match="invalid object key"):
        check_key(key)


def test_local_store_concurrent_writers_never_tear(tmp_path):
    store = LocalStore(tmp_path)
    payloads = [bytes([i]) * 200_000 for i in range(8)]

    def write(data: bytes) -> None:
        for _ in range(5):
            store.put_bytes("shared/object", data)

    threads = [threading.Thread(target=write, args=(p,)) for p in payloads]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert store.get_bytes("shared/object") in payloads
    assert store.list_keys() == ["shared/object"]  # no temporary files left behind


def test_local_store_has_no_urls(tmp_path):
    assert LocalStore(tmp_path).url_for("x") is None


def test_presigned_url_works_and_tampering_is_refused(seaweed_server):
    bucket = f"p-{uuid.uuid4().hex[:12]}"
    seaweed_server.make_bucket(bucket)
    store = S3Store(seaweed_server.client(), bucket)
    store.put_bytes("downloads/m.csv", b"a,b\n1,2\n", "text/csv")
    url = store.url_for("downloads/m.csv", expires=60)
    ok = requests.get(url, timeout=10)
    assert ok.status_code == 200 and ok.content == b"a,b\n1,2\n"
    tampered = url.replace("downloads/m.csv", "downloads/n.csv")
    assert requests.get(tampered, timeout=10).status_code == 403
    bad_signature = url[:-4] + ("0000" if not url.endswith("0000") else "1111")
    assert requests.get(bad_signature, timeout=10).status_code == 403


def test_wrong_credentials_are_refused(seaweed_server):
    from botocore.exceptions import ClientError

    bucket = f"c-{uuid.uuid4().hex[:12]}"
    seaweed_server.make_bucket(bucket)
    client = make_s3_client(seaweed_server.endpoint, "us-east-1", "expaudit-test-key", "wrong-secret")
    with pytest.raises(ClientError, match="SignatureDoesNotMatch|AccessDenied|403"):
        S3Store(client, bucket).put_bytes("x", b"1")


def test_unreachable_s3_raises_store_unavailable():
    from tests.support.servers import free_port

    client = make_s3_client(f"http://127.0.0.1:{free_port()}", "us-east-1", "k", "s")
    with pytest.raises(StoreUnavailable, match="S3 get_object failed"):
        S3Store(client, "bucket").get_bytes("x")


def test_parse_s3_url():
    assert parse_s3_url("s3://bucket/some/prefix/") == ("bucket", "some/prefix")
    assert parse_s3_url("s3://bucket") == ("bucket", "")
    with pytest.raises(ValueError, match="names no bucket"):
        parse_s3_url("s3:///x")
    with pytest.raises(ValueError, match="must start with s3://"):
        parse_s3_url("/tmp/x")
