"""A lab-sized submission through the service: upload, validation, audit job, report.

Setting: K = 1,000 experiences x 2,000 scenes (400 states x 5 draws) x 5
seeds, held in a `StaticCatalog` (a lab's own matrix); its full scores file
is 2,000,000 rows (105 MB as CSV), over the fixed upload limits, so the
limits derived from the catalog must admit it. The real app (Flask, in
process), a real Redis server, a local object store and the real audit job
(rq `SimpleWorker`, burst) with the default 2,000 shuffles and 2,000
bootstrap resamples. Prints the time of each step and the process's peak
resident memory.

Usage: python benchmarks/lab_submission_bench.py [--k 1000] [--states 400] [--format csv]
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import io  # noqa: E402
import resource  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import redis  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from leaderboard.scores import limits as uploads  # noqa: E402
from service.queues import jobs  # noqa: E402
from service.web.app import create_app  # noqa: E402
from service.catalog import StaticCatalog  # noqa: E402
from service.submissions import AuditOptions  # noqa: E402
from service.process import ServiceConfig  # noqa: E402
from service.store import LocalStore  # noqa: E402
from service.submissions import catalog_limits  # noqa: E402
from service.queues import queues  # noqa: E402
from tests.support.servers import ADMIN_TOKEN, RedisServer, bearer, synthetic_setting


def scores_file(data, fmt: str) -> bytes:
    """A full scores table (every experience in every scene), written with pandas."""
    k, q = data.outcomes.shape[:2]
    rng = np.random.default_rng(1)
    frame = pd.DataFrame({
        "scene_id": np.repeat(np.array(data.scenes.scene_ids, dtype=object), k),
        "experience_id": np.tile(np.array(data.experience_ids, dtype=object), q),
        "score": rng.normal(size=k * q),
    })
    if fmt == "parquet":
        buffer = io.BytesIO()
        frame.to_parquet(buffer, index=False)
        return buffer.getvalue()
    return frame.to_csv(index=False).encode()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--k", type=int, default=1000)
    parser.add_argument("--states", type=int, default=400)
    parser.add_argument("--format", choices=("csv", "parquet"), default="csv")
    args = parser.parse_args()
    summary, data = synthetic_setting("lab-bench", k=args.k, n_states=args.states, draws=5, seeds=5)
    catalog = StaticCatalog({summary: data})
    body = scores_file(data, args.format)
    limits = catalog_limits(catalog)
    print(f"setting: K={args.k} x {data.scenes.n_scenes} scenes x 5 seeds; scores file "
          f"{len(body) / 1e6:.1f} MB {args.format}, {args.k * data.scenes.n_scenes} rows; upload limits: "
          f"body {limits.body_limit(ServiceConfig().max_upload_bytes) / 1e6:.1f} MB, "
          f"rows {limits.row_limit(uploads.MAX_PARQUET_ROWS)}, decoded Parquet "
          f"{limits.decoded_limit(uploads.MAX_PARQUET_UNPACKED_BYTES) / 1e6:.0f} MB")
    with tempfile.TemporaryDirectory() as tmp:
        server = RedisServer(Path(tmp) / "redis").start()
        try:
            connection = redis.Redis.from_url(server.url)
            store = LocalStore(Path(tmp) / "store")
            app = create_app({"admin_token": ADMIN_TOKEN}, store=store, redis=connection, catalog=catalog,
                             service_config=ServiceConfig())
            client = app.test_client()
            token = client.post("/api/v1/tokens", json={"name": "lab", "owner": "lab"}, headers=bearer(ADMIN_TOKEN)).json["token"]
            t0, c0 = time.perf_counter(), time.process_time()
            response = client.post("/api/v1/submissions", headers=bearer(token), content_type="multipart/form-data",
                                   data={"file": (io.BytesIO(body), f"scores.{args.format}"), "setting": "lab-bench"})
            upload_s, upload_cpu = time.perf_counter() - t0, time.process_time() - c0
            if response.status_code != 202:
                raise SystemExit(f"upload refused: {response.status_code} {response.get_data(as_text=True)}")
            jobs.install_context(jobs.JobContext(store=store, redis=connection, catalog=catalog,
                                                 options=AuditOptions(2000, 2000)))
            from rq import SimpleWorker

            t0, c0 = time.perf_counter(), time.process_time()
            SimpleWorker(queues(connection), connection=connection).work(burst=True, logging_level="WARNING")
            job_s, job_cpu = time.perf_counter() - t0, time.process_time() - c0
            status = client.get(response.json["status_url"], headers=bearer(token)).json
            report = client.get(f"{response.json['status_url']}/report", headers=bearer(token))
            if report.status_code != 200:
                raise SystemExit(f"no report: {status}")
            within = report.json["ranking"]["within_query_auroc"]
        finally:
            jobs.install_context(None)
            server.stop()
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"upload and validation (request): {upload_cpu:.1f} s CPU ({upload_s:.1f} s wall); audit job "
          f"(read, validate, audit, JSON and HTML report, publish): {job_cpu:.1f} s CPU ({job_s:.1f} s wall); "
          f"state {status['state']}; within-query AUROC {within}; peak RSS of this process {peak:.0f} MiB")


if __name__ == "__main__":
    main()
