"""gunicorn settings of the web process (`gunicorn -c python:service.process.gunicorn_conf`).

`forwarder_headers` is emptied: by default gunicorn takes `SCRIPT_NAME` and
`PATH_INFO` headers from clients on 127.0.0.1 (its trusted proxy list) and
answers 500 when the script name is no prefix of the path. The service is
served at the root (a proxy that publishes it under a prefix strips the
prefix), so these headers are dropped like any other header with an
underscore; `service.web.request_body.FixedScriptName` ignores a script name
that reaches the app some other way.

`child_exit`: with the Prometheus client in multiprocess mode
(`PROMETHEUS_MULTIPROC_DIR`, set by `expaudit serve` and the container's
`web` role), a web process that exited is marked dead, so its live gauges
stop counting; its counters stay in the directory, so the totals a scrape
adds up never fall when gunicorn replaces a worker (`service.process.metrics`).

The worker class is chosen by the command: `expaudit serve`, which faces
clients with nothing in front, runs gevent workers (`service.serve.embedded.web_command`);
the container's `web` role keeps sync workers behind nginx, which buffers
whole requests before passing them on.
"""

import os

forwarder_headers = ""


def child_exit(server, worker):  # noqa: ARG001 (gunicorn's hook signature)
    path = os.environ.get("PROMETHEUS_MULTIPROC_DIR")
    if path:
        from prometheus_client import multiprocess

        multiprocess.mark_process_dead(worker.pid, path)
