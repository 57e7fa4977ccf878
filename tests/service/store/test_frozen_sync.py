"""The frozen data served from the store (`service.store.frozen_sync`): pushed once, synced
into a host's own directory with every file checked, and `expaudit runner --sync-frozen`."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import uuid

import pytest

from service.store.frozen_sync import (BLOBS, FrozenMismatch, NoFrozenInStore, push_frozen,
                                       sync_frozen)
from service.store.storage import LocalStore, S3Store
from tests.support.paths import REPO_ROOT
from tests.support.servers import service_env

FILES = {"libraries/stack-k10-a/experiences.parquet": b"PAR1 experiences",
         "query_sets/stack-hidden/scenes.parquet": b"PAR1 scenes",
         "README.md": b"# frozen\n"}


def _root(path):
    """A small frozen root with its manifest.json (path, bytes, sha256 of every file)."""
    for rel, data in FILES.items():
        (path / rel).parent.mkdir(parents=True, exist_ok=True)
        (path / rel).write_bytes(data)
    manifest = {"files": {rel: {"bytes": len(d), "sha256": hashlib.sha256(d).hexdigest()}
                          for rel, d in FILES.items()}}
    (path / "manifest.json").write_text(json.dumps(manifest))
    return path


def _contents(path) -> dict:
    return {str(p.relative_to(path)): p.read_bytes() for p in path.rglob("*") if p.is_file()}


def test_pushed_once_synced_into_an_empty_host_directory_on_the_s3_server(tmp_path,
                                                                         seaweed_server):
    bucket = f"frozen-{uuid.uuid4().hex[:8]}"
    seaweed_server.make_bucket(bucket)
    store = S3Store(seaweed_server.client(), bucket, "svc")
    source = _root(tmp_path / "main")
    assert push_frozen(store, source).written == 3
    assert push_frozen(store, source).written == 0  # content-addressed: nothing twice
    host = tmp_path / "runner-host"
    done = sync_frozen(store, host)
    assert (done.files, done.written) == (3, 3)
    assert _contents(host) == _contents(source)
    assert sync_frozen(store, host).written == 0  # already the same


def test_a_changed_local_file_is_replaced_and_others_are_left(tmp_path):
    store = LocalStore(tmp_path / "store")
    push_frozen(store, _root(tmp_path / "main"))
    host = tmp_path / "host"
    sync_frozen(store, host)
    (host / "README.md").write_bytes(b"edited")
    (host / "cells").mkdir()
    (host / "cells" / "local.parquet").write_bytes(b"mine")
    assert sync_frozen(store, host).written == 1
    assert (host / "README.md").read_bytes() == FILES["README.md"]
    assert (host / "cells" / "local.parquet").read_bytes() == b"mine"


def test_a_damaged_blob_is_refused_and_the_local_file_kept(tmp_path):
    store = LocalStore(tmp_path / "store")
    push_frozen(store, _root(tmp_path / "main"))
    digest = hashlib.sha256(FILES["README.md"]).hexdigest()
    store.put_bytes(BLOBS + digest, b"forged")
    host = tmp_path / "host"
    (host).mkdir()
    (host / "README.md").write_bytes(b"old")
    with pytest.raises(FrozenMismatch, match="'README.md' does not match its sha256"):
        sync_frozen(store, host)
    assert (host / "README.md").read_bytes() == b"old"


def test_push_refuses_a_root_that_does_not_match_its_manifest(tmp_path):
    root = _root(tmp_path / "main")
    (root / "README.md").write_bytes(b"changed after the manifest")
    store = LocalStore(tmp_path / "store")
    with pytest.raises(FrozenMismatch, match="README.md does not match its sha256"):
        push_frozen(store, root)
    assert store.list_keys("") == []
    with pytest.raises(NoFrozenInStore, match="push-frozen"):
        sync_frozen(store, tmp_path / "host")


def test_a_runner_syncs_its_frozen_root_from_the_store_before_serving(tmp_path, redis_server):
    store_dir = tmp_path / "store"
    env = service_env(EXPAUDIT_STORE=str(store_dir), PYTHONPATH=str(REPO_ROOT),
                      EXPAUDIT_REDIS_URL=redis_server.url.rsplit("/", 1)[0] + "/11",
                      EXPAUDIT_SANDBOX="none")
    pushed = subprocess.run([sys.executable, "-m", "expaudit", "service", "push-frozen",
                             "--frozen-root", str(_root(tmp_path / "main"))], env=env,
                            capture_output=True, text=True, timeout=120)
    assert pushed.returncode == 0, pushed.stderr
    assert "3 files" in pushed.stdout
    host = tmp_path / "host" / "frozen"
    ran = subprocess.run([sys.executable, "-m", "expaudit", "runner", "--burst", "--sync-frozen",
                          "--frozen-root", str(host)], env=env, capture_output=True, text=True,
                         timeout=300, cwd=tmp_path)
    assert ran.returncode == 0, ran.stdout[-2000:] + ran.stderr[-2000:]
    assert "3 files, 3 downloaded" in ran.stdout
    assert _contents(host) == _contents(tmp_path / "main")
    packaged = subprocess.run([sys.executable, "-m", "expaudit", "runner", "--burst",
                               "--sync-frozen"], env=env, capture_output=True, text=True,
                              timeout=120, cwd=tmp_path)
    assert packaged.returncode == 2 and "--sync-frozen needs --frozen-root" in packaged.stderr
