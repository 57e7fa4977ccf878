"""A stop signal during a worker's start-up ends it cleanly and deregisters it (real Redis)."""

from __future__ import annotations

import multiprocessing
import os
import signal
import time
import types

import pytest
from rq import Queue, SimpleWorker, Worker

from service.queues.worker_loop import StopsCleanly



class KilledByDefault(Exception):
    """What the signal would do without the mixin's handlers: end the process."""


class _SignalsWhileStarting(SimpleWorker):
    """Sends itself SIGTERM inside one start-up step, where RQ has no handlers yet."""

    signal_in = ""

    def register_birth(self):
        super().register_birth()
        if self.signal_in == "register_birth":
            os.kill(os.getpid(), signal.SIGTERM)

    def _start_scheduler(self, *args, **kwargs):
        if self.signal_in == "_start_scheduler":
            os.kill(os.getpid(), signal.SIGTERM)
        super()._start_scheduler(*args, **kwargs)


class Probe(StopsCleanly, _SignalsWhileStarting):
    pass


@pytest.fixture()
def default_stop_signals():
    """SIGTERM raises instead of killing pytest; the process's handlers come back after."""
    def die(signum, _frame):
        raise KilledByDefault(signum)

    saved = {sig: signal.signal(sig, die) for sig in (signal.SIGTERM, signal.SIGINT)}
    yield
    for sig, handler in saved.items():
        signal.signal(sig, handler)


@pytest.mark.parametrize("step", ["register_birth", "_start_scheduler"])
def test_a_stop_during_start_up_deregisters_the_worker(step, redis_conn, default_stop_signals):
    Probe.shutdown_requested = False
    worker = Probe([Queue("stop-test", connection=redis_conn)], connection=redis_conn)
    worker.signal_in = step
    worked = worker.work(burst=False, with_scheduler=True, logging_level="WARNING")
    assert worked is False
    assert Probe.shutdown_requested, "the restart loops would start another worker"
    assert Worker.all(connection=redis_conn) == [], "a stopped worker is still registered"
    assert not StopsCleanly.shutdown_requested, "the flag belongs to the worker class that stopped"


def test_the_project_workers_stop_cleanly():
    from service.runner.rollout_runner import RunnerWorker
    from service.queues.worker import ServiceWorker

    assert ServiceWorker.__mro__[1] is StopsCleanly and RunnerWorker.__mro__[1] is StopsCleanly


class _Stoppable:
    shutdown_requested = False


def test_workers_restart_with_a_doubling_back_off_until_stopped(monkeypatch):
    from service.queues import worker_loop

    waits: list[float] = []
    monkeypatch.setattr(worker_loop.time, "sleep", waits.append)
    calls: list[int] = []

    def work_once():
        calls.append(1)
        if len(calls) <= 5:
            raise ConnectionError("redis is not up yet")
        _Stoppable.shutdown_requested = True

    _Stoppable.shutdown_requested = False
    worker_loop.work_until_stopped(_Stoppable, work_once, burst=False, retry_on=(ConnectionError,),
                                   role="worker")
    assert len(calls) == 6
    assert waits == [1.0, 2.0, 4.0, 8.0, worker_loop.MAX_BACKOFF_S]

    def unexpected():
        raise ValueError("a bug, not a dependency")

    _Stoppable.shutdown_requested = False
    with pytest.raises(ValueError, match="a bug"):
        worker_loop.work_until_stopped(_Stoppable, unexpected, burst=False,
                                       retry_on=(ConnectionError,), role="worker")
    calls.clear()
    worker_loop.work_until_stopped(_Stoppable, lambda: calls.append(1), burst=True,
                                   retry_on=(ConnectionError,), role="worker")
    assert calls == [1], "a burst worker works once"

    def unreachable():
        calls.append(2)
        raise ConnectionError("redis down")

    with pytest.raises(ConnectionError, match="redis down"):  # batch use fails at once, no waiting
        worker_loop.work_until_stopped(_Stoppable, unreachable, burst=True,
                                       retry_on=(ConnectionError,), role="worker")
    assert calls == [1, 2]


def _scheduler_that_missed_its_stop(ready):
    """A scheduler process that got SIGTERM before installing its handler: it goes on."""
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    ready.set()
    while True:
        time.sleep(0.05)


@pytest.mark.timeout(30)
def test_a_scheduler_that_missed_its_stop_signal_does_not_hang_the_worker(monkeypatch):
    """RQ's own stop joins the scheduler without a limit, so this hung (seen under load in the
    full suite: a worker stopped during start-up waited forever on its forked scheduler)."""
    from service.queues import worker_loop

    monkeypatch.setattr(worker_loop, "SCHEDULER_STOP_GRACE_S", 0.5, raising=False)
    context = multiprocessing.get_context("fork")
    ready = context.Event()
    process = context.Process(target=_scheduler_that_missed_its_stop, args=(ready,))
    process.start()
    assert ready.wait(30)
    worker = Probe.__new__(Probe)
    worker.scheduler = types.SimpleNamespace(_process=process)
    began = time.monotonic()
    worker.stop_scheduler()
    assert not process.is_alive()
    assert process.exitcode == -signal.SIGKILL
    assert time.monotonic() - began < 30
