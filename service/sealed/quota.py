"""Sealed settings: outcomes never leave the service; submissions are rationed.

A sealed setting's scenes, images and library are public like any other's;
its outcomes are not downloadable (`GET .../outcomes` answers 403 `sealed`),
no reference rule is published on it, and a submission's report on it holds
one number released through the Ladder (`service.sealed.report`). On top of
that, submissions to sealed settings are limited per owner per UTC day
(`EXPAUDIT_SEALED_SUBMISSIONS_PER_DAY`), see docs/sealed.md for the bound. The
owner is the one the operator named when creating the token (`TokenInfo.owner`),
so every token of an owner draws on one quota: revoking a token and issuing a
new one to the same owner does not refill it.

The object store is the quota's system of record: each counted submission
leaves a claim under ``state/sealed-quota/<owner>/<YYYYMMDD>/``. Redis
holds the day's counter so that concurrent requests count atomically; a
counter that Redis lost (restart, flush) is rebuilt from the claims before it
is used. The quota fails closed: with Redis down, sealed submissions get 503
rather than going through uncounted.
"""

from __future__ import annotations

import json
import logging
import uuid
from dataclasses import dataclass
from datetime import datetime, timezone

import redis as redis_lib

from service.catalog import Catalog
from service.errors import TooManyRequests
from service.store import ObjectStore, StoreError

log = logging.getLogger(__name__)

QUOTA_KEY = "expaudit:sealed:{owner}:{day}"
QUOTA_TTL_S = 2 * 24 * 3600
CLAIM_PREFIX = "state/sealed-quota/{owner}/{day}/"
"""Store prefix of one owner's counted sealed submissions on one UTC day."""


def sealed_settings(catalog: Catalog, setting_ids: list[str]) -> list[str]:
    """The sealed ones among `setting_ids`."""
    return [s for s in setting_ids if catalog.get_setting(s).sealed]


def _seconds_to_midnight(now: datetime) -> int:
    midnight = now.replace(hour=0, minute=0, second=0, microsecond=0)
    return max(1, 24 * 3600 - int((now - midnight).total_seconds()))


def _day(now: datetime | None) -> tuple[datetime, str]:
    now = now or datetime.now(timezone.utc)
    return now, now.strftime("%Y%m%d")


@dataclass(frozen=True)
class QuotaClaim:
    """One counted sealed submission: its day's counter and its record in the store."""

    owner: str
    day: str
    key: str
    count: int


def claims_today(store: ObjectStore, owner: str, now: datetime | None = None) -> int:
    """How many sealed submissions the store records for `owner` on `now`'s UTC day."""
    _, day = _day(now)
    return len(store.list_keys(CLAIM_PREFIX.format(owner=owner, day=day)))


def take_sealed_quota(redis: redis_lib.Redis, store: ObjectStore, owner: str, limit: int,
                      now: datetime | None = None) -> QuotaClaim:
    """Count one sealed submission of `owner` (the token's owner, never its id: every token
    of an owner shares the quota) today and record it in the store.

    Raises `TooManyRequests` (code `sealed_quota`, with `retry_after` until
    midnight UTC) when the day's `limit` is spent; the refused attempt is not
    counted. A Redis error propagates (503: the quota fails closed), and so
    does a store error, after the counter was given back.
    """
    now, day = _day(now)
    key = QUOTA_KEY.format(owner=owner, day=day)
    if not redis.exists(key):
        # Redis lost the counter (or this is the day's first): the store's claims are the count.
        redis.set(key, claims_today(store, owner, now), nx=True, ex=QUOTA_TTL_S)
    count = int(redis.incr(key))
    redis.expire(key, QUOTA_TTL_S)
    if count > limit:
        redis.decr(key)
        retry = _seconds_to_midnight(now)
        raise TooManyRequests(f"at most {limit} submissions to sealed settings per UTC day, for "
                              f"all the tokens of one owner together; try again in {retry} s",
                              field="setting", code="sealed_quota", extra={"retry_after": retry})
    claim_key = CLAIM_PREFIX.format(owner=owner, day=day) + uuid.uuid4().hex
    try:
        store.put_bytes(claim_key, json.dumps({"at": now.isoformat()}).encode(), "application/json")
    except BaseException:
        redis.decr(key)
        raise
    return QuotaClaim(owner=owner, day=day, key=claim_key, count=count)


def give_back_sealed_quota(redis: redis_lib.Redis, store: ObjectStore, claim: QuotaClaim) -> None:
    """Undo `take_sealed_quota` for a submission that was not created after all.

    Both halves are attempted whatever the other does: a claim the store could
    not delete only matters if Redis later loses the counter the same day.
    """
    try:
        store.delete(claim.key)
    except (StoreError, OSError) as exc:
        log.warning("sealed quota claim not deleted (counted again only after a Redis loss "
                    "today): %s", type(exc).__name__)
    redis.decr(QUOTA_KEY.format(owner=claim.owner, day=claim.day))


def give_back_claim_key(redis: redis_lib.Redis, store: ObjectStore, claim_key: str) -> bool:
    """Give back the claim stored at `claim_key` (a `QuotaClaim.key`, as a submission's
    manifest records it) for a submission that failed before it could tell anything about
    the outcomes (its selector failed); True if it was still counted.

    Once per claim: the day's counter is lowered only when the claim was still in the store
    and only while Redis holds that counter (one it lost is rebuilt from the claims).
    """
    parts = claim_key.split("/")
    owner, day = parts[-3], parts[-2]
    if not claim_key.startswith(CLAIM_PREFIX.format(owner=owner, day=day)) or \
            not store.exists(claim_key):
        return False
    store.delete(claim_key)
    key = QUOTA_KEY.format(owner=owner, day=day)
    if redis.exists(key):
        redis.decr(key)
    return True
