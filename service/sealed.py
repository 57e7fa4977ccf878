"""Sealed settings: outcomes never leave the service; submissions are rationed.

A sealed setting's scenes, images and library are public like any other's;
its outcomes are not downloadable (`GET .../outcomes` answers 403 `sealed`)
and reach users only as the aggregate numbers of an audit report, which never
lists per-cell outcomes. Each audit still reveals the success rate of the
submitted choices, so submissions to sealed settings are limited per token
per UTC day (`EXPAUDIT_SEALED_SUBMISSIONS_PER_DAY`): probing the hidden
matrix one crafted selection at a time takes years, not an afternoon.

The daily count lives in Redis (`expaudit:sealed:<token id>:<YYYYMMDD>`,
expiring after two days). Unlike the request rate limit it fails closed: when
Redis is down the API answers 503 rather than letting sealed submissions
through uncounted.
"""

from __future__ import annotations

from datetime import datetime, timezone

import redis as redis_lib

from service.catalog import Catalog
from service.errors import TooManyRequests

QUOTA_KEY = "expaudit:sealed:{owner}:{day}"
QUOTA_TTL_S = 2 * 24 * 3600


def sealed_settings(catalog: Catalog, setting_ids: list[str]) -> list[str]:
    """The sealed ones among `setting_ids`."""
    return [s for s in setting_ids if catalog.get_setting(s).sealed]


def _seconds_to_midnight(now: datetime) -> int:
    midnight = now.replace(hour=0, minute=0, second=0, microsecond=0)
    return max(1, 24 * 3600 - int((now - midnight).total_seconds()))


def take_sealed_quota(redis: redis_lib.Redis, owner: str, limit: int,
                      now: datetime | None = None) -> int:
    """Count one sealed submission of `owner` today; returns today's count.

    Raises `TooManyRequests` (code `sealed_quota`, with `retry_after` until
    midnight UTC) when the day's `limit` is spent; the refused attempt is not
    counted.
    """
    now = now or datetime.now(timezone.utc)
    key = QUOTA_KEY.format(owner=owner, day=now.strftime("%Y%m%d"))
    count = int(redis.incr(key))
    redis.expire(key, QUOTA_TTL_S)
    if count > limit:
        redis.decr(key)
        retry = _seconds_to_midnight(now)
        raise TooManyRequests(f"at most {limit} submissions to sealed settings per token per UTC "
                              f"day; try again in {retry} s", field="setting", code="sealed_quota",
                              extra={"retry_after": retry})
    return count


def give_back_sealed_quota(redis: redis_lib.Redis, owner: str, now: datetime | None = None) -> None:
    """Undo `take_sealed_quota` for a submission that was not created after all."""
    now = now or datetime.now(timezone.utc)
    redis.decr(QUOTA_KEY.format(owner=owner, day=now.strftime("%Y%m%d")))
