"""Container health check: asks the part this container runs whether it is alive.

The entrypoint records the role in `$EXPAUDIT_STATE_DIR/expaudit-role`. The web
role must answer `/healthz` with 200; worker and runner roles must reach Redis
(an RQ worker without Redis can take no job). Exit status 0 = healthy.
"""

from __future__ import annotations

import os
import sys
import urllib.error
import urllib.request
from pathlib import Path


def _role() -> str:
    path = Path(os.environ.get("EXPAUDIT_STATE_DIR", "/tmp")) / "expaudit-role"
    try:
        return path.read_text(encoding="utf-8").strip()
    except FileNotFoundError:
        return "web"


def _web_ok() -> tuple[bool, str]:
    url = f"http://127.0.0.1:{os.environ.get('EXPAUDIT_PORT', '8000')}/healthz"
    try:
        with urllib.request.urlopen(url, timeout=4) as response:  # noqa: S310 (fixed local URL)
            return response.status == 200, f"{url} answered {response.status}"
    except urllib.error.HTTPError as exc:
        return False, f"{url} answered {exc.code}"
    except (urllib.error.URLError, OSError) as exc:
        return False, f"{url} unreachable: {exc}"


def _redis_ok() -> tuple[bool, str]:
    import redis

    url = os.environ.get("EXPAUDIT_REDIS_URL")
    if not url:
        return False, "EXPAUDIT_REDIS_URL is not set"
    try:
        redis.Redis.from_url(url, socket_timeout=4).ping()
    except redis.RedisError as exc:
        return False, f"redis unreachable: {exc}"
    return True, "redis answers"


def main() -> int:
    role = _role()
    if role == "web":
        healthy, detail = _web_ok()
    elif role in ("worker", "runner"):
        healthy, detail = _redis_ok()
    else:
        healthy, detail = True, f"role {role!r} has no health probe"
    sys.stdout.write(f"{role}: {detail}\n")
    return 0 if healthy else 1


if __name__ == "__main__":
    sys.exit(main())
