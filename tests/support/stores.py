"""The two object stores the store tests run against: a local directory and a bucket on
the real SeaweedFS S3 server."""

from __future__ import annotations

import uuid

from service.store.storage import LocalStore, S3Store


def local_or_s3_store(request, tmp_path, bucket_prefix: str, hex_chars: int):
    """For a fixture parametrized with "local" and "s3": a LocalStore under `tmp_path`, or
    an S3Store on a fresh bucket named `bucket_prefix` plus `hex_chars` random hex digits."""
    if request.param == "local":
        return LocalStore(tmp_path / "store")
    server = request.getfixturevalue("seaweed_server")
    bucket = f"{bucket_prefix}{uuid.uuid4().hex[:hex_chars]}"
    server.make_bucket(bucket)
    return S3Store(server.client(), bucket, prefix="svc")
