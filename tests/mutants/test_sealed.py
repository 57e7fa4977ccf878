"""The sealed quota's wait until midnight, its give-back when the store fails, the Ladder's edges.

What mutation testing of the sealed quota and the Ladder showed untested: the
`retry_after` of a refusal late in the day (to the second, and never 0), the
claim's record, the counter given back when a claim cannot be written or
deleted, a rebuilt counter racing a count, the UTC day when no time is given,
and the Ladder's margin, release threshold, score range and bound.
"""

from __future__ import annotations

import json
import logging
import time
from datetime import datetime, timezone

import pytest

from service.errors import TooManyRequests
from service.sealed.ladder import Release, grid_size, information_bound_bits, ladder_margin, ladder_release
from service.sealed.quota import QUOTA_KEY, claims_today, give_back_sealed_quota, take_sealed_quota
from service.store.storage import LocalStore, StoreError



@pytest.mark.parametrize("clock,retry_after", [
    ((23, 59, 30, 250_000), 30),  # minutes, seconds and microseconds of the day all count
    ((23, 0, 0, 0), 3600),
    ((23, 59, 59, 999_999), 1),  # never 0: a client told to retry in 0 s retries at once
    ((0, 0, 0, 0), 24 * 3600),
])
def test_a_refusal_says_how_long_until_midnight_utc(redis_conn, store, clock, retry_after):
    now = datetime(2026, 3, 1, *clock, tzinfo=timezone.utc)
    take_sealed_quota(redis_conn, store, "tok-a", 1, now)
    with pytest.raises(TooManyRequests) as refused:
        take_sealed_quota(redis_conn, store, "tok-a", 1, now)
    assert refused.value.extra == {"retry_after": retry_after}
    assert refused.value.message.endswith(f"try again in {retry_after} s")


def test_a_claim_the_store_cannot_delete_is_logged_and_the_counter_still_given_back(
        tmp_path, redis_conn, caplog):
    class Undeletable(LocalStore):
        def delete(self, key):
            raise StoreError("the store is read-only")

    store = Undeletable(tmp_path / "store")
    now = datetime(2026, 3, 1, 12, tzinfo=timezone.utc)
    claim = take_sealed_quota(redis_conn, store, "tok-a", 2, now)
    caplog.set_level(logging.WARNING, logger="service.sealed.quota")
    give_back_sealed_quota(redis_conn, store, claim)
    assert int(redis_conn.get(QUOTA_KEY.format(owner="tok-a", day="20260301"))) == 0
    assert [r.getMessage() for r in caplog.records if r.name == "service.sealed.quota"] == [
        "sealed quota claim not deleted (counted again only after a Redis loss today): StoreError"]


def test_a_claim_records_when_it_was_taken_as_json(tmp_path, redis_conn):
    class Recording(LocalStore):
        content_types: dict = {}

        def put_bytes(self, key, data, content_type="application/octet-stream"):
            self.content_types[key] = content_type
            super().put_bytes(key, data, content_type)

    store = Recording(tmp_path / "store")
    now = datetime(2026, 3, 1, 12, tzinfo=timezone.utc)
    claim = take_sealed_quota(redis_conn, store, "tok-a", 2, now)
    assert json.loads(store.get_bytes(claim.key)) == {"at": "2026-03-01T12:00:00+00:00"}
    assert store.content_types[claim.key] == "application/json"


def test_a_claim_the_store_cannot_write_gives_the_counter_back(tmp_path, redis_conn):
    class Unwritable(LocalStore):
        def put_bytes(self, key, data, content_type="application/octet-stream"):
            raise StoreError("the store is full")

    now = datetime(2026, 3, 1, 12, tzinfo=timezone.utc)
    with pytest.raises(StoreError):
        take_sealed_quota(redis_conn, Unwritable(tmp_path / "store"), "tok-a", 2, now)
    assert int(redis_conn.get(QUOTA_KEY.format(owner="tok-a", day="20260301"))) == 0


def test_a_counter_rebuilt_from_the_claims_never_overwrites_one_counted_meanwhile(tmp_path, redis_conn):
    key = QUOTA_KEY.format(owner="tok-a", day="20260301")

    class Racing(LocalStore):
        """Another request rebuilt the counter and counted itself while this one listed the claims."""

        def list_keys(self, prefix=""):
            keys = super().list_keys(prefix)
            redis_conn.set(key, 1)
            return keys

    now = datetime(2026, 3, 1, 12, tzinfo=timezone.utc)
    assert take_sealed_quota(redis_conn, Racing(tmp_path / "store"), "tok-a", 2, now).count == 2


def test_without_a_time_the_day_is_the_utc_day_whatever_the_local_zone(store, redis_conn, monkeypatch):
    take_sealed_quota(redis_conn, store, "tok-a", 5, datetime.now(timezone.utc))
    try:
        for zone in ("Etc/GMT-14", "Etc/GMT+12"):  # 26 hours apart: one of them is another date
            monkeypatch.setenv("TZ", zone)
            time.tzset()
            assert claims_today(store, "tok-a") == 1
    finally:
        monkeypatch.undo()
        time.tzset()


# ------------------------------------------------------------------ the Ladder


def test_the_ladder_margin_of_one_scene_is_the_whole_range_and_of_none_an_error():
    assert ladder_margin(1) == 1.0
    assert ladder_margin(100) == 0.1  # 1/sqrt(100) is on the hundredths already: not rounded up
    assert ladder_margin(200) == 0.08
    with pytest.raises(ValueError, match=r"^n_scenes must be positive, got 0$"):
        ladder_margin(0)


def test_a_score_is_released_from_exactly_one_margin_above_the_best():
    assert ladder_release(0.5, 0.75, 0.25) == Release(value=0.75, best=0.75, previous_best=0.5, margin=0.25)
    assert ladder_release(0.5, 0.74, 0.25) == Release(value=None, best=0.5, previous_best=0.5, margin=0.25)
    assert ladder_release(None, 0.37, 0.25) == Release(value=0.25, best=0.25, previous_best=None,
                                                        margin=0.25)
    assert ladder_release(None, 0.38, 0.25).value == 0.5
    assert ladder_release(None, 0.0, 0.25).value == 0.0 and ladder_release(0.75, 1.0, 0.25).value == 1.0
    for score in (-0.01, 1.01):
        with pytest.raises(ValueError, match=rf"^score must be a success rate in \[0, 1\], got {score}$"):
            ladder_release(None, score, 0.25)


def test_the_grid_and_the_bound():
    assert [grid_size(m) for m in (1.0, 0.25, 0.1, 0.08)] == [2, 5, 11, 13]
    assert information_bound_bits(3, 0.25) == pytest.approx(5 * 2 + 5)
    assert information_bound_bits(0, 0.5) == pytest.approx(3)
