"""Limits and caps of a selector run, each with the reason for its value.

One place for every number the sandboxes use, so the service, the CLI and the
tests agree and a deployment can read what a submitted selector is allowed.
"""

from __future__ import annotations

MIB = 1 << 20

WALL_SECONDS = 600.0
"""Wall-clock limit of one selector run. Scoring 200 query scenes against at
most 50 experiences is seconds of work for any sensible rule; ten minutes
leaves room for a learned model's start-up on a CPU without letting a stuck
selector hold a worker."""

MEMORY_BYTES = 4096 * MIB
"""Memory limit of the whole run: the container's memory cgroup; in the local
sandbox the run's own memory cgroup, and RLIMIT_AS per process as well.
Enough for a small vision model and the 32x32 .. 256x256 images of a query
set; less than a runner host's share per job."""

PIDS = 64
"""Process/thread limit. A selector needs a handful of threads (BLAS, data
loaders); 64 stops a fork bomb long before it affects the host. In the local
sandbox this is the run cgroup's `pids.max` and RLIMIT_NPROC of the sandbox
uid; where no cgroup can be made the local sandbox allows one process (and
no threads), so that its per-process memory limit is the run's."""

CPUS = 2.0
"""CPU share (Docker nano_cpus / 1e9). The local sandbox turns it into the run
cgroup's CPU quota (cpus x the period) and CPU set (ceil(cpus) cores, which
`sched_setaffinity` inside cannot widen), plus an RLIMIT_CPU of cpus * wall
seconds."""

OUTPUT_BYTES = 64 * MIB
"""Size cap of /output. A complete scores file is 200 scenes x 50
experiences x ~40 bytes = 0.4 MB; 64 MiB is generous and still cannot fill a
disk. The local sandbox's /output is a tmpfs of this size and no single file
may grow past it (RLIMIT_FSIZE)."""

SCORES_BYTES = 16 * MIB
"""Largest `scores.csv` read back. Forty times the largest legitimate file;
anything bigger is rejected before parsing so the parser never sees it."""

TMP_BYTES = 256 * MIB
"""Size of the writable tmpfs /tmp. It is memory outside the memory limit,
so it is capped separately."""

OPEN_FILES = 256
"""RLIMIT_NOFILE in the local sandbox: a selector opens a few files at a time."""

LOG_TAIL_BYTES = 64 * 1024
"""Bytes of stdout and of stderr kept (the last ones) and shown to the owner:
enough for a Python traceback and progress lines, small enough for a report."""

SANDBOX_UID_RANGE = (200000, 300000)
"""Uids (and gids) the local sandbox draws from, one per run: no account or
file on the host has them, and RLIMIT_NPROC (the pids limit) counts processes
per uid, so a fork bomb in one run cannot starve a concurrent one."""

DOCKER_USER = "65534:65534"
"""User the container runs as, whatever the image's USER says."""

KILL_GRACE_SECONDS = 5.0
"""Extra time the host side waits past the wall limit before it kills the
whole sandbox itself (the sandbox's own timer fires first; this is the
backstop for a sandbox that stopped answering)."""

SETUP_SECONDS = 10.0
"""Time allowed for building the sandbox (namespaces, mounts, the check that
the interpreter starts inside) before the selector starts; a slow host must
not eat the selector's wall time."""

SANDBOX_PATH = "/usr/local/bin:/usr/bin:/bin"
"""PATH inside the sandbox."""
