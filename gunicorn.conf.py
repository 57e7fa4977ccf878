"""gunicorn reads this file when started in the repository root: the service's settings."""

from service.gunicorn_conf import *  # noqa: F401,F403
