"""The leaderboard rebuild lock lapses within seconds when its holder dies.

A worker killed in the middle of a rebuild (found by the compose test, which
kills the worker container mid-job) must not hold up every later publication
for a job's whole timeout: the lock lives `LEASE_TTL_S` and is renewed while
the rebuild runs. Real redis-server; the holder is a real process, killed.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest
import redis

from service.process import defaults

from service.queues import jobs


KEY = "expaudit:lock:leaderboard"

HOLDER = textwrap.dedent("""
    import sys, threading, types
    import redis
    from service.queues import jobs
    def rebuild(*args, **kwargs):
        print("rebuilding", flush=True)
        threading.Event().wait()  # a rebuild that never ends: its process is killed
    jobs.rebuild_leaderboard = rebuild
    ctx = types.SimpleNamespace(redis=redis.Redis.from_url(sys.argv[1]), store=None,
                                catalog=None, options=None)
    jobs._rebuild_locked(ctx)
""")


def _context(url: str):
    import types

    return types.SimpleNamespace(redis=redis.Redis.from_url(url), store=None, catalog=None,
                                 options=None)


@pytest.mark.slow
def test_lock_of_a_killed_rebuild_lapses_and_the_next_rebuild_runs(redis_server, monkeypatch):
    conn = redis.Redis.from_url(redis_server.url)
    conn.delete(KEY)
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, redis_server.url],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline() == "rebuilding\n"
        # held past its first lifetime: the running rebuild renews it
        time.sleep(defaults.LEASE_TTL_S + 2)
        assert conn.exists(KEY)
        assert 0 < conn.pttl(KEY) <= defaults.LEASE_TTL_S * 1000
        os.kill(holder.pid, signal.SIGKILL)
        holder.wait(timeout=10)
        # the dead holder's lock runs out within one lease lifetime, not a job timeout
        assert 0 < conn.pttl(KEY) <= defaults.LEASE_TTL_S * 1000
    finally:
        if holder.poll() is None:
            holder.kill()
            holder.wait(timeout=10)
        holder.stdout.close()
    monkeypatch.setattr(jobs, "rebuild_leaderboard", lambda *args, **kwargs: 7)
    assert jobs._rebuild_locked(_context(redis_server.url)) == 7
    assert not conn.exists(KEY)
