"""gunicorn reads this file when started in the repository root: the service's settings."""

from service.process.gunicorn_conf import *  # noqa: F401,F403
