"""The object store of the compose test: SeaweedFS on port 9000, and the bucket set-up.

serve   `weed mini` with S3 on :9000, one identity from MINIO_ROOT_USER and
        MINIO_ROOT_PASSWORD, data under /data (the store's volume)
ready   exit 0 once an authenticated bucket listing answers (health check)
setup   create $EXPAUDIT_BUCKET and let anyone read only its leaderboard/
        prefix, as `mc mb --ignore-existing` and `mc anonymous set download`
        do; the endpoint is $S3_ENDPOINT (default http://minio:9000)
"""

import json
import os
import shutil
import sys
import time

PORT = 9000


def _client(endpoint):
    import boto3
    from botocore.config import Config

    return boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1",
                        aws_access_key_id=os.environ["MINIO_ROOT_USER"],
                        aws_secret_access_key=os.environ["MINIO_ROOT_PASSWORD"],
                        config=Config(retries={"max_attempts": 1}, connect_timeout=3, read_timeout=5))


def serve():
    config = "/tmp/s3-identities.json"
    with open(config, "w", encoding="utf-8") as handle:
        json.dump({"identities": [{
            "name": "root",
            "credentials": [{"accessKey": os.environ["MINIO_ROOT_USER"],
                             "secretKey": os.environ["MINIO_ROOT_PASSWORD"]}],
            "actions": ["Admin", "Read", "Write", "List", "Tagging"]}]}, handle)
    weed = shutil.which("weed")
    os.execv(weed, [weed, "mini", "-dir=/data", "-ip=127.0.0.1", "-ip.bind=0.0.0.0",
                    f"-s3.config={config}", f"-s3.port={PORT}", "-s3.port.iceberg=0",
                    "-s3.port.lance=0", "-webdav=false", "-admin.ui=false",
                    "-volume.preStopSeconds=0", "-master.volumeSizeLimitMB=64"])


def ready():
    try:
        _client(f"http://127.0.0.1:{PORT}").list_buckets()
    except Exception as exc:  # noqa: BLE001 (any failure is "not ready")
        print(f"not ready: {exc}")
        return 1
    print("ready")
    return 0


def setup():
    from botocore.exceptions import BotoCoreError, ClientError

    bucket = os.environ.get("EXPAUDIT_BUCKET", "expaudit")
    client = _client(os.environ.get("S3_ENDPOINT", "http://minio:9000"))
    deadline = time.monotonic() + 60
    while True:
        try:
            client.create_bucket(Bucket=bucket)
            break
        except ClientError as exc:
            if exc.response["Error"]["Code"] in ("BucketAlreadyExists", "BucketAlreadyOwnedByYou"):
                break
            if time.monotonic() > deadline:
                raise
        except BotoCoreError:
            if time.monotonic() > deadline:
                raise
        time.sleep(1)
    policy = {"Version": "2012-10-17", "Statement": [{
        "Effect": "Allow", "Principal": {"AWS": ["*"]}, "Action": ["s3:GetObject"],
        "Resource": [f"arn:aws:s3:::{bucket}/leaderboard/*"]}]}
    client.put_bucket_policy(Bucket=bucket, Policy=json.dumps(policy))
    print(f"bucket {bucket} ready; anonymous read of {bucket}/leaderboard/*")
    return 0


if __name__ == "__main__":
    command = sys.argv[1] if len(sys.argv) > 1 else "serve"
    if command == "serve":
        serve()
    sys.exit({"ready": ready, "setup": setup}[command]())
