"""Every tunable constant of the service, each with the reason for its value.

Settings from the environment (`service.process.config`) override the ones marked
"overridable"; the rest are fixed design choices kept here so that a reader
finds every number of the service in one file.
"""

from __future__ import annotations

API_PREFIX = "/api/v1"
"""All REST endpoints live under this prefix; a breaking change gets /api/v2."""

LOCAL_STORE_DIR = "var/store"
"""Embedded default object store: a directory under the working directory."""

LOCAL_REDIS_DIR = "var/redis"
"""Where `expaudit serve` keeps the data of the Redis server it starts itself."""

LOCAL_CELLS_DIR = "var/cells"
"""Where runners append the cells they compute (EXPAUDIT_CELLS_DIR) when the store is not
a local directory; beside a local store it is that store's sibling `cells` (`var/cells`
beside the default `var/store`). Never the frozen root: that may be inside the installed
package, which every local-sandbox selector can read, or a source checkout."""

CELLS_DIR_NAME = "cells"
"""Name of the computed-cells directory beside a local store (`service.process.config.cells_dir`)."""

MAX_UPLOAD_BYTES = 32 * 1024 * 1024
"""Largest accepted scores upload (overridable). A K=50 x Q=200 long-format CSV
is about 0.5 MB; 32 MB leaves room for many settings in one file while keeping
one request's memory bounded. A floor: raised to what a full scores file of the
catalog's largest setting needs (`service.submissions.limits`)."""

PRESIGNED_URL_EXPIRY_S = 15 * 60
"""Lifetime of a presigned download URL: long enough to start a large download
on a slow link, short enough that a leaked URL stops working the same hour."""

RATE_LIMIT_PER_MINUTE = 120
"""Requests one token may make per minute window (overridable). Reading status
every second while waiting stays well inside it; a runaway loop does not."""

RATE_LIMIT_WINDOW_S = 60
"""Length of the fixed rate-limit window; its counter key expires with it."""

MAX_ACTIVE_SUBMISSIONS = 4
"""Submissions one token may have queued or running at once (overridable):
one user cannot fill the queue ahead of everyone else."""

RATE_LIMIT_FLUSH_REQUESTS = 10
"""A web process adds its count of a token's requests to the shared Redis
counter at least every this many requests (bounding the overshoot)."""

RATE_LIMIT_FLUSH_INTERVAL_S = 0.5
"""... and at least this often, so a slow trickle is counted promptly."""

TOKEN_LOCAL_CACHE_S = 5.0
"""A web process remembers a verified token this long without asking Redis;
a revoked token is refused by every process within it (at once by the process
that revoked it)."""

TOKEN_CACHE_TTL_S = 300
"""How long a verified token hash stays cached in Redis before the object
store (the system of record) is read again. A revocation overwrites the entry
at once; one that Redis missed is completed by every web process before it
trusts the cache again."""

TOKEN_EVICTION_CHECK_S = TOKEN_LOCAL_CACHE_S
"""How often a web process looks in the store for revocations Redis missed
(one listing of a small prefix); as often as a token is remembered locally,
so that revocation reaches every process within the same few seconds."""

FAILED_AUTH_PER_MINUTE = 30
"""Bearer tokens that fail to verify one client address may send in the minute
from its first failure before all its tokens are refused (429) for a minute:
a mistyped token is retried a few times, a guessing loop is stopped, and each
guess costs a store read."""

WEB_TIMEOUT_S = 120
"""gunicorn's worker timeout under `expaudit serve` (a web worker silent this long is
killed, its request lost). An upload is read and checked inside its request: a
2,000,000-row CSV took 4.1 s of CPU and 12 s wall read as columns on a loaded 2-core
machine, and about 13 s of CPU read cell by cell (docs/service.md, "Upload limits"), so
its wall time under the same load nears gunicorn's default 30 s; 120 s leaves room."""

HEALTHZ_WRITE_CHECK_S = 5.0
"""A web process trusts a successful `/healthz` write check this long: a probe polled every
second writes the store at most once per this time per process, and a store turned
read-only is reported within it (at once when a request of the process met the refusal)."""

HEALTHZ_PROBE_BYTES = 4096
"""Size of the object `/healthz` writes (and deletes) to check that the store takes writes:
at least one byte, since an empty file still fits on a full file system (an inode, no
block); one block of common local file systems, so a store with less than a block free
is reported full. At most one such write per `HEALTHZ_WRITE_CHECK_S` per web process."""

TRUSTED_PROXIES = 0
"""Reverse proxies in front of the web process that append the address they
saw to `X-Forwarded-For` (EXPAUDIT_TRUSTED_PROXIES; compose: 1, its nginx).
Off by default: a client can write that header, so it is ignored unless the
deployment says how many of its entries its own proxies wrote."""

ACTIVE_RESERVATION_TTL_S = 300
"""A create request's slot under the concurrency cap lapses after this if the
request never finishes (its web process died); a request lasts seconds."""

IDEMPOTENT_WAIT_S = 5.0
"""How long a request repeating an Idempotency-Key waits for the concurrent
request that holds the key to finish writing its submission (milliseconds
normally) before it answers 503 with Retry-After."""

IDEMPOTENT_POLL_FIRST_S = 0.005
"""First pause of that wait between two looks at the store; it doubles after each look..."""

IDEMPOTENT_POLL_MAX_S = 0.25
"""... up to this: about ten store reads in the first second, four a second after it."""

JOB_TIMEOUT_S = 600
"""Wall-clock limit of one audit job; a K=50 audit with 2000 shuffles and
2000 bootstrap resamples takes seconds, and a lab-sized K=1,000 x 2,000-scene
submission (reading and validating its 2,000,000-row file, the audit, the
reports) well under a minute of CPU, so ten minutes only stops a hang."""

JOB_RETRY_INTERVALS_S = (2, 5, 15, 30)
"""Backoff between retries of a job that failed for an infrastructure reason
(store or Redis unavailable); submitter errors are never retried. The sum
(about a minute) rides out a restart of the object store or Redis."""

LEASE_TTL_S = 10
"""A running job holds a Redis lease on its submission and renews it every
third of this; when the worker dies the lease lapses within this time and the
reconciler may run the submission again."""

RECONCILE_INTERVAL_S = 30
"""A worker that has been idle this long re-checks the store for submissions
that are not final and have no job (e.g. after Redis lost its queues)."""

RESULT_TTL_S = 3600
"""RQ keeps a finished job's return value this long; the outcome that matters
is written to the object store, so this is only for debugging."""

FAILURE_TTL_S = 7 * 24 * 3600
"""RQ keeps a failed job (with its traceback) a week for operators."""

LEADERBOARD_LOCK_TIMEOUT_S = JOB_TIMEOUT_S
"""How long a leaderboard rebuild waits for the Redis lock that keeps two
rebuilds from interleaving their writes (the holder renews that lock every
third of `LEASE_TTL_S`, so it lapses within seconds if its holder dies). As
long as a job may run: the first rebuild after a data change embeds every
image for the reference rules (minutes on two cores)."""

LADDER_LOCK_TIMEOUT_S = 30
"""Lifetime of, and longest wait for, the lock around one submitter's Ladder on a
sealed setting (docs/sealed.md). Its holder reads and writes one small store
object, so a lock left by a dead worker lapses in seconds, not a job's time."""

AUDIT_QUEUE = "audit"
"""RQ queue of audit jobs (one per submission)."""

PUBLISH_QUEUE = "publish"
"""RQ queue of leaderboard rebuilds; listened to before the audit queue so a
finished audit is published promptly."""

SELECTOR_QUEUE = "selectors"
"""RQ queue of the audit jobs of container submissions (`service.queues.jobs.queue_for`):
the selector runs in a sandbox, so these jobs go to the process that holds the
sandbox (`expaudit runner`, which alone holds the Docker socket in a
deployment); scores-file audits stay on `AUDIT_QUEUE`."""

WORKER_QUEUES = (PUBLISH_QUEUE, AUDIT_QUEUE)
"""Queues `expaudit worker` serves unless told otherwise (overridable, by
`--queues` or EXPAUDIT_WORKER_QUEUES). `expaudit serve` adds `SELECTOR_QUEUE`
so container submissions run without a runner."""

WORKER_QUEUE_CHOICES = (PUBLISH_QUEUE, AUDIT_QUEUE, SELECTOR_QUEUE)
"""Queues a worker may serve, in the order it listens to them (publish first)."""

DEFAULT_PORT = 8000
"""Port `expaudit serve` listens on unless told otherwise."""

GUNICORN_WORKERS = 2
"""Web processes of `expaudit serve` (one per core on a small machine)."""

WEB_WORKER_CLASS = "gevent"
"""gunicorn's worker class under `expaudit serve`, which faces clients with no proxy in
front: a sync worker is held by one connection until its request has arrived, so two
clients dripping a header line every few seconds stopped `/healthz` for as long as they
dripped. A gevent worker reads every connection in a greenlet of its own (up to
`WEB_WORKER_CONNECTIONS`), so a slow client holds a greenlet, not the process; the app
reads an upload after the token is checked, as before. The compose file keeps sync
workers behind nginx, which buffers whole requests."""

WEB_WORKER_CONNECTIONS = 1000
"""Connections one gevent web process of `expaudit serve` holds at once (gunicorn's
default; each costs a greenlet and a file descriptor)."""

WEB_HEADER_TIMEOUT_S = 10
"""Seconds a connection to `expaudit serve` has to deliver a request's line and headers
(gunicorn's keep-alive time, which bounds the read of each request's head in an async
worker): a client dripping header lines is disconnected after this, and an idle kept-alive
connection is closed. A genuine client sends its headers in one packet; nginx allows 60 s,
the web server of `serve` less since it also bounds idle connections."""

METRICS_HOST = "127.0.0.1"
"""Address of the metrics listener of `expaudit serve --metrics-port` unless
`--metrics-host` says otherwise: the same host, not the network."""

METRICS_DIR = "metrics"
"""Under `expaudit serve`'s data directory (`var/`): the Prometheus client's multiprocess
files of its web processes (PROMETHEUS_MULTIPROC_DIR), emptied when `serve` starts."""

SUPERVISOR_MAX_BACKOFF_S = 30.0
"""`expaudit serve` restarts a child that exited after 1 s, doubling the wait
while it keeps exiting, up to this: a crash loop costs a start every half minute."""

SUPERVISOR_STABLE_S = 60.0
"""A child that ran this long before it exited is restarted after 1 s again."""

SANDBOX_BACKEND = "local"
"""Where container submissions run unless configured otherwise (overridable):
the namespace sandbox needs no engine, so `expaudit serve` runs them anywhere
it runs as root; production runners set `docker`."""

SANDBOX_BACKENDS = ("local", "docker", "none")
"""`none` refuses container submissions (a service that only takes scores files)."""

SELECTOR_WALL_SECONDS = 300
"""Wall-clock limit of one selector run (overridable). Nearest neighbour over
200 scenes x 50 experiences takes seconds; five minutes leave room for a model
forward pass per image on a CPU, and stay well inside `JOB_TIMEOUT_S`."""

SELECTOR_WALL_SECONDS_MAX = JOB_TIMEOUT_S - 120
"""The audit job must outlive the selector: two minutes remain for building
/input, reading the scores and the audit itself."""

SELECTOR_ARCHIVE_MAX_FILES = 2000
"""Entries a selector archive may hold; a selector is a few files plus weights."""

SELECTOR_ARCHIVE_MAX_BYTES = 256 * 1024 * 1024
"""Unpacked size cap of a selector archive (a gzip bomb stops here, checked from
the headers before anything is written)."""

SELECTOR_ARCHIVE_MAX_RATIO = 100
"""Unpacked size a selector archive may reach per byte uploaded, once past
`SELECTOR_ARCHIVE_RATIO_FREE_BYTES`: sources and weights compress 2-10 times, a
file of zeros about 1000 times. Counted on the decompressed stream as it is read,
so a bomb stops within a second instead of keeping a web worker busy."""

SELECTOR_ARCHIVE_RATIO_FREE_BYTES = 16 * 1024 * 1024
"""Unpacked bytes a selector archive may always reach, whatever its ratio (a small
selector with a sparse file is no threat)."""

SEALED_SUBMISSIONS_PER_DAY = 5
"""Submissions one token may make per UTC day to sealed settings (overridable).
Each audit report reveals aggregate success rates of the submitted choices; a
daily cap keeps a submitter from reconstructing the hidden outcomes by probing
with many crafted selections."""

ROLLOUT_QUEUE = "rollouts"
"""RQ queue of rollout chunks, served by `expaudit runner` (the simulator role)."""

RUNNER_QUEUES = (SELECTOR_QUEUE, ROLLOUT_QUEUE)
"""Queues `expaudit runner` serves: sandboxed selector audits (listened to first:
each is one submitter's wait) and rollout chunks."""

ROLLOUT_CHUNK_STATES = 10
"""Physical states per rollout job (one experience, all seeds): 10 x 5 = 50
Replay cells, about 20 s on one core (0.33 s a cell measured), small enough
that progress moves and a dead runner loses little."""

ROLLOUT_MAX_RUNS = 3
"""Runs of one rollout chunk before the audit gives up on it (its cells keep
not landing: usually a runner writing to another frozen root)."""

ROLLOUT_JOB_TIMEOUT_S = 1800
"""Wall-clock limit of one rollout chunk (a simulator that hangs is stopped)."""

RUNNER_HEARTBEAT_TTL_S = 120
"""A runner beats after every batch of a rollout chunk; a chunk whose runner has not beaten
for this long (the runner or its host died) is abandoned, and the next worker maintenance
(any runner's start, or every few minutes) fails it, which wakes the waiting audit to
enqueue it again. Longer than one batch of cells (an image-policy batch included)."""
