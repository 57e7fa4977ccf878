"""Diagnostics that use the labels (AUDIT_SPEC "Diagnostics that use labels").

They locate a failure, they are never methods: each changes the library or
the scores with knowledge of the outcomes and reports the rule's advantage
afterwards (paper, Table III and the random sub-libraries of the discussion).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np

from leaderboard.metrics import defaults
from leaderboard.metrics.chunking import row_blocks
from leaderboard.metrics.reference import library_references
from leaderboard.metrics.rerank import csls, mutual_proximity
from leaderboard.metrics.selection import advantage, select, success


@dataclass(frozen=True)
class SubLibraryAdvantage:
    """The rule's advantage on a modified library or with re-ranked scores.

    `experiences` are library indices kept (None when the library is unchanged);
    `value` is the advantage, None with `reason` when undefined or not applicable.
    """

    value: float | None
    reason: str | None
    experiences: tuple[int, ...] | None = None
    quality_range: float | None = None


@dataclass(frozen=True)
class RandomSubLibraries:
    """Share of random K'=10 sub-libraries where the rule concentrates more than the oracle."""

    share_exceeding_oracle: float | None
    reason: str | None
    n_draws: int
    size: int
    mean_concentration_ratio: float | None = None


def advantage_on(y: np.ndarray, scores: np.ndarray, keep: np.ndarray | None = None) -> SubLibraryAdvantage:
    """Advantage of re-selecting with `scores` on the rows `keep` of the library.

    Random and oracle are those of the reduced library itself.
    """
    experiences = None
    if keep is not None:
        experiences = tuple(int(i) for i in keep)
        y, scores = y[keep], scores[keep]
    random, oracle, quality = library_references(y)
    value, reason = advantage(success(y, select(scores)), random, oracle)
    spread = float(quality.max() - quality.min()) if keep is not None else None
    return SubLibraryAdvantage(value, reason, experiences, spread)


def delete_top_pick(y: np.ndarray, scores: np.ndarray, top_pick: int) -> SubLibraryAdvantage:
    """Drop the rule's top pick from the library and re-select among the rest."""
    if y.shape[0] < 2:
        return SubLibraryAdvantage(None, "the library has one experience: nothing is left after deletion")
    keep = np.delete(np.arange(y.shape[0]), top_pick)
    return advantage_on(y, scores, keep)


def equalized_subset(quality: np.ndarray, size: int) -> tuple[int, ...]:
    """Library indices of the size-`size` subset whose qualities have the smallest range.

    Exhaustive over all subsets for K <= `EQUALIZE_EXHAUSTIVE_MAX_K`
    (first minimal subset in lexicographic index order), otherwise a
    sliding window over the qualities sorted stably (first minimal window).
    """
    n = len(quality)
    if n <= defaults.EQUALIZE_EXHAUSTIVE_MAX_K:
        best = min(
            itertools.combinations(range(n), size),
            key=lambda combo: float(quality[list(combo)].max() - quality[list(combo)].min()),
        )
        return tuple(best)
    order = np.argsort(quality, kind="stable")
    ordered = quality[order]
    ranges = ordered[size - 1 :] - ordered[: n - size + 1]
    start = int(np.argmin(ranges))
    return tuple(sorted(int(i) for i in order[start : start + size]))


def equalized_library(y: np.ndarray, scores: np.ndarray, quality: np.ndarray) -> SubLibraryAdvantage:
    """The rule's advantage on the quality-equalized sub-library of size min(K, 5)."""
    size = min(y.shape[0], defaults.EQUALIZED_LIBRARY_SIZE)
    keep = np.array(equalized_subset(quality, size))
    return advantage_on(y, scores, keep)


def _top_pick_shares(y: np.ndarray, scores: np.ndarray, draws: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(rule, oracle) top-pick share in each sub-library of `draws` (n, size): one gather, one argmax."""
    n_draws, size = draws.shape
    n_scenes = y.shape[1]
    sub_y = y[draws]  # (n, size, Q)
    picks = np.argmax(scores[draws], axis=1)  # (n, Q)
    counts = np.zeros((n_draws, size))
    np.add.at(counts, (np.repeat(np.arange(n_draws), n_scenes), picks.ravel()), 1.0)
    best = sub_y.max(axis=1, keepdims=True)
    tied = (sub_y == best).astype(np.float64)
    oracle_share = (tied / tied.sum(axis=1, keepdims=True)).sum(axis=2).max(axis=1) / n_scenes
    return counts.max(axis=1) / n_scenes, oracle_share


def random_sublibraries(
    y: np.ndarray,
    scores: np.ndarray,
    rng: np.random.Generator,
    n_draws: int = defaults.SUBLIBRARY_DRAWS,
    size: int = defaults.SUBLIBRARY_SIZE,
) -> RandomSubLibraries:
    """Share of random sub-libraries where the rule's top-pick share exceeds the oracle's.

    Applies to libraries of at least `SUBLIBRARY_SOURCE_K` experiences. The
    draws are one (n_draws, size) index matrix; they are evaluated in blocks
    of draws (`chunking.row_blocks`), each one gather and one argmax, so
    memory is bounded whatever the number of scenes.
    """
    n_experiences, n_scenes = y.shape
    if n_experiences < defaults.SUBLIBRARY_SOURCE_K:
        return RandomSubLibraries(
            None,
            (
                f"not applicable: the library has K = {n_experiences} experiences; random "
                f"K = {size} sub-libraries are drawn from libraries of K >= {defaults.SUBLIBRARY_SOURCE_K}"
            ),
            n_draws,
            size,
        )
    # sorted rows keep library order inside a draw, so ties still go to the lowest index
    draws = np.sort(np.argsort(rng.random((n_draws, n_experiences)), axis=1)[:, :size], axis=1)
    rule_share, oracle_share = np.empty(n_draws), np.empty(n_draws)
    for block in row_blocks(n_draws, size * n_scenes):
        rule_share[block], oracle_share[block] = _top_pick_shares(y, scores, draws[block])
    return RandomSubLibraries(
        share_exceeding_oracle=float((rule_share > oracle_share).mean()),
        reason=None,
        n_draws=n_draws,
        size=size,
        mean_concentration_ratio=float((rule_share / oracle_share).mean()),
    )


def reranked(y: np.ndarray, scores: np.ndarray) -> dict[str, SubLibraryAdvantage]:
    """The rule's advantage after CSLS and after mutual-proximity re-ranking."""
    return {
        "csls": advantage_on(y, csls(scores)),
        "mutual_proximity": advantage_on(y, mutual_proximity(scores)),
    }
