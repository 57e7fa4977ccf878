"""The benchmark service: its processes and what they share.

The web process is `service.web` (`service.web.app.create_app`, run by
gunicorn); the job worker runs `service.queues.jobs` under `service.queues.worker`; the
rollout runner runs `service.runner.rollout_runner`; `service.serve.embedded` starts all
three with their defaults (`expaudit serve`). Connections (Redis, the object
store, the Docker client) are passed in; importing a module connects to
nothing. `service.client.Client` is the Python client of the REST API.
"""
