"""gunicorn settings of the web process (`gunicorn -c python:service.process.gunicorn_conf`).

`forwarder_headers` is emptied: gunicorn would take `SCRIPT_NAME` and `PATH_INFO` from
clients on 127.0.0.1 and answer 500 when the script name is no prefix of the path; the
service is served at the root (`service.web.request_body.FixedScriptName` ignores a
script name that arrives otherwise). `child_exit` marks a replaced web process dead for
the Prometheus client's multiprocess mode (`service.process.metrics`). The worker class
is the command's: gevent under `expaudit serve`, sync behind nginx in the container's
`web` role. Why: docs/service.md ("Running it").
"""

import os

forwarder_headers = ""


def child_exit(server, worker):  # noqa: ARG001 (gunicorn's hook signature)
    path = os.environ.get("PROMETHEUS_MULTIPROC_DIR")
    if path:
        from prometheus_client import multiprocess

        multiprocess.mark_process_dead(worker.pid, path)
