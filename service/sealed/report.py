"""The report of a submission on a sealed setting: headline numbers through the Ladder.

A full report would leak a sealed setting's cells, so a sealed report is computed from
the outcomes here and holds only the success of the submitted choices as released by
the Ladder (`service.sealed.ladder`), the setting's random and oracle success on the
same grid, and the advantage computed from those. The Ladder's state lives in the
object store, under a Redis lock; the submitter is the token's owner, so all of an
owner's tokens climb one Ladder, and a re-executed audit reports its recorded release
again. Why and what leaks otherwise: docs/sealed.md.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import numpy as np
import redis as redis_lib

from leaderboard.matrix import TransferData
from leaderboard.metrics.reference import library_references
from leaderboard.metrics.selection import advantage, select, success
from service.process import defaults
from service.sealed.ladder import Release, information_bound_bits, ladder_margin, ladder_release, on_grid
from service.store import ObjectNotFound, ObjectStore

SEALED_SCHEMA = "expaudit-sealed-report/1"
LADDER_KEY = "state/sealed-ladder/{owner}/{setting}.json"
"""Store key of one owner's Ladder on one sealed setting (the owner of a token from before
owners existed is its token id, where its Ladder was kept)."""
LADDER_LOCK = "expaudit:lock:ladder:{owner}:{setting}"


@dataclass(frozen=True)
class SealedNumbers:
    """The exact numbers a sealed audit computes; never stored or sent as they are."""

    success_rule: float
    success_random: float
    success_oracle: float
    n_experiences: int
    n_scenes: int


def sealed_numbers(data: TransferData, scores: np.ndarray) -> SealedNumbers:
    """Success of the rule's choices (AUDIT_SPEC selection) and the library references."""
    y = data.success_matrix()
    random, oracle, _ = library_references(y)
    return SealedNumbers(success_rule=success(y, select(np.asarray(scores, dtype=np.float64))),
                         success_random=random, success_oracle=oracle,
                         n_experiences=y.shape[0], n_scenes=y.shape[1])


def _read_ladder(store: ObjectStore, key: str) -> dict:
    try:
        return json.loads(store.get_bytes(key))
    except ObjectNotFound:
        return {"best": None, "releases": {}}


def release_for(store: ObjectStore, redis: redis_lib.Redis, owner: str, setting_id: str,
                submission_id: str, score: float, margin: float) -> Release:
    """Run one submission through its owner's Ladder on `setting_id` (once: a repeat of the
    same submission returns what it released the first time). `owner` is the token's owner
    (`Manifest.sealed_owner`), never the token id of a token that has one."""
    key = LADDER_KEY.format(owner=owner, setting=setting_id)
    lock = redis.lock(LADDER_LOCK.format(owner=owner, setting=setting_id),
                      timeout=defaults.LADDER_LOCK_TIMEOUT_S,
                      blocking_timeout=defaults.LADDER_LOCK_TIMEOUT_S)
    with lock:
        ladder = _read_ladder(store, key)
        earlier = ladder["releases"].get(submission_id)
        if earlier is not None:
            return Release(value=earlier["value"], best=earlier["best"],
                           previous_best=earlier["previous_best"], margin=earlier["margin"])
        release = ladder_release(ladder["best"], score, margin)
        ladder["best"] = release.best
        ladder["releases"][submission_id] = {"value": release.value, "best": release.best,
                                             "previous_best": release.previous_best,
                                             "margin": margin}
        store.put_bytes(key, json.dumps(ladder, sort_keys=True).encode(), "application/json")
    return release


def sealed_report(setting_id: str, numbers: SealedNumbers, release: Release,
                  n_submissions: int) -> dict:
    """The whole report of a sealed submission (no other number of the audit is in it)."""
    margin = release.margin
    random, oracle = on_grid(numbers.success_random, margin), on_grid(numbers.success_oracle, margin)
    adv = None
    if release.value is not None:
        value, _ = advantage(release.value, random, oracle)
        adv = None if value is None else round(value, 6) + 0.0
    if release.new_best:
        text = (f"Success {release.value:.2f} (rounded to the setting's margin of {margin:.2f}); "
                "your best on this setting.")
    else:
        text = (f"Not above your best of {release.best:.2f} by the margin of {margin:.2f}: "
                "no new score is released for this submission.")
    return {
        "schema_version": SEALED_SCHEMA,
        "sealed": True,
        "inputs": {"setting_id": setting_id, "n_experiences": numbers.n_experiences,
                   "n_scenes": numbers.n_scenes},
        "reference": {"success_rule": release.value, "success_random": random,
                      "success_oracle": oracle, "advantage": adv},
        "release": {"rule": "ladder", "margin": margin, "new_best": release.new_best,
                    "best": release.best, "previous_best": release.previous_best,
                    "information_bound_bits": round(information_bound_bits(n_submissions, margin), 1),
                    "n_submissions": n_submissions},
        "verdict": {"label": "sealed", "text": text},
    }


def audit_sealed(store: ObjectStore, redis: redis_lib.Redis, owner: str, setting_id: str,
                 submission_id: str, data: TransferData, scores: np.ndarray) -> dict:
    """The sealed report of one submission (releases it through the owner's Ladder)."""
    numbers = sealed_numbers(data, scores)
    margin = ladder_margin(numbers.n_scenes)
    release = release_for(store, redis, owner, setting_id, submission_id,
                          numbers.success_rule, margin)
    n_submissions = len(_read_ladder(store, LADDER_KEY.format(owner=owner, setting=setting_id))
                        ["releases"])
    return sealed_report(setting_id, numbers, release, n_submissions)
